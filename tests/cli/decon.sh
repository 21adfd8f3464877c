#!/usr/bin/env bash
# ctest-labels: long
# `replica decon` end to end on bundled text with the bytes tokenizer (one token per byte, so the
# test needs no tokenizer data): clean training data reports zero contaminated items and exits 0;
# training data into which held-out passages were mixed reports exactly those passages (and the
# cloze items cut from their sentences) and exits 1
# (0 again with --threshold); bad input exits 2 with a message naming the file and line.
set -euo pipefail
bin="$1"; root="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Bytes -> uint32 little-endian token ids, documents separated by EOS 256 (perl-base is Essential).
tokens() { perl -ne 'BEGIN{binmode STDOUT} chomp; print pack("V*", unpack("C*", $_), 256)'; }
text_of() { perl -MJSON::PP -ne 'BEGIN{binmode STDOUT, ":encoding(UTF-8)"} print JSON::PP->new->utf8->decode($_)->{text}, "\n"'; }

zstd -dc "$root/data/corpus/moby_dick.jsonl.zst" | text_of | tokens > "$tmp/clean.npy"
ppl="$root/data/eval/sotu_heldout_ppl.jsonl"
# The misconfigured shard: the clean documents plus passages 3, 10 and 50 of the held-out set.
{ cat "$tmp/clean.npy"; sed -n '3p;10p;50p' "$ppl" | text_of | tokens; } > "$tmp/dirty.npy"
# Expected: those passages, and every cloze item (context + gold) whose sentence lies inside one.
ids=$( { sed -n '3p;10p;50p' "$ppl" | perl -MJSON::PP -ne 'print JSON::PP->new->utf8->decode($_)->{id}, "\n"';
  sed -n '3p;10p;50p' "$ppl" | perl -MJSON::PP -e 'my $J = JSON::PP->new->utf8;
    my @p = map { $J->decode($_)->{text} } <STDIN>;
    open(my $f, "<", $ARGV[0]) or die; while (<$f>) { my $i = $J->decode($_);
      my $t = $i->{context} . $i->{choices}[$i->{gold}];
      print "$i->{id}\n" if grep { index($_, $t) >= 0 } @p; }' "$root/data/eval/sotu_cloze.jsonl"; } | sort)
n_ids=$(echo "$ids" | wc -l)

# Byte 13-grams are short: common phrases overlap, so only long spans count as contamination.
args=(--tokenizer bytes --eval "$ppl" "$root/data/eval/sotu_cloze.jsonl" --min-span 200 --json)
"$bin" decon --train "$tmp/clean.npy" "${args[@]}" > "$tmp/clean.json" || fail "clean data: exit $?"
perl -MJSON::PP -e 'local $/; my $j = JSON::PP->new->decode(<STDIN>);
  die "eval_items $j->{eval_items}\n" unless $j->{eval_items} == 307;
  die "contaminated $j->{contaminated_items}\n" unless $j->{contaminated_items} == 0;
  die "pass\n" unless $j->{pass};' < "$tmp/clean.json" || fail "clean report"

set +e; "$bin" decon --train "$tmp/dirty.npy" "${args[@]}" > "$tmp/dirty.json"; rc=$?; set -e
[ "$rc" = 1 ] || fail "dirty data: expected exit 1, got $rc"
found=$(perl -MJSON::PP -e 'local $/; my $j = JSON::PP->new->decode(<STDIN>);
  die "contaminated $j->{contaminated_items}\n" unless $j->{contaminated_items} == $ARGV[0];
  for my $it (@{$j->{items}}) { next unless $it->{contaminated};
    die "coverage $it->{coverage}\n" unless $it->{coverage} == 1;
    print "$it->{id}\n"; }' "$n_ids" < "$tmp/dirty.json" | sort) || fail "dirty report"
[ "$found" = "$ids" ] || fail "found items [$found], injected [$ids]"
"$bin" decon --train "$tmp/dirty.npy" "${args[@]}" --threshold "$n_ids" > /dev/null || fail "--threshold $n_ids should pass"

# Bad input: malformed JSONL (file:line), a missing file, a torn token file.
printf '{"id":"a","text":"ok"}\n{"id":"b","text":\n' > "$tmp/bad.jsonl"
set +e; "$bin" decon --train "$tmp/clean.npy" --tokenizer bytes --eval "$tmp/bad.jsonl" 2> "$tmp/err"; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "bad.jsonl:2: not valid JSON" "$tmp/err" || fail "malformed JSONL: rc $rc, $(cat "$tmp/err")"
set +e; "$bin" decon --train "$tmp/missing.npy" --tokenizer bytes --eval "$ppl" 2> "$tmp/err"; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "missing.npy" "$tmp/err" || fail "missing file: rc $rc, $(cat "$tmp/err")"
printf 'abc' > "$tmp/torn.npy"
set +e; "$bin" decon --train "$tmp/torn.npy" --tokenizer bytes --eval "$ppl" 2> "$tmp/err"; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "torn.npy: size 3 bytes is not a whole number" "$tmp/err" || fail "torn file: rc $rc"
: > "$tmp/empty.jsonl"
set +e; "$bin" decon --train "$tmp/clean.npy" --tokenizer bytes --eval "$tmp/empty.jsonl" 2> "$tmp/err"; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "empty.jsonl: the evaluation set is empty" "$tmp/err" || fail "empty set: rc $rc"

# Progress on stderr (as eval's): tokens scanned of the files' total, the file, then 100%;
# --no-progress prints none. The results are the same either way.
n_tok=$(( ($(stat -c %s "$tmp/clean.npy") + $(stat -c %s "$tmp/dirty.npy")) / 4 ))
n_fmt=$(perl -e '$_ = shift; 1 while s/^(\d+)(\d{3})/$1,$2/; print' "$n_tok")  # thousands separated
set +e; "$bin" decon --train "$tmp/clean.npy" "$tmp/dirty.npy" "${args[@]}" > "$tmp/p.json" 2> "$tmp/err"; set -e
grep -q "^decon: 0% (0 of $n_fmt tokens), .*; $tmp/clean.npy$" "$tmp/err" \
  || fail "no first progress line for $n_fmt tokens: $(cat "$tmp/err")"
grep -q "^decon: 100% ($n_fmt of $n_fmt tokens), .* elapsed$" "$tmp/err" \
  || fail "no final progress line: $(cat "$tmp/err")"
set +e; "$bin" decon --train "$tmp/clean.npy" "$tmp/dirty.npy" "${args[@]}" --no-progress \
  > "$tmp/q.json" 2> "$tmp/err"; set -e
[ ! -s "$tmp/err" ] || fail "--no-progress printed: $(cat "$tmp/err")"
cmp -s <(grep -v seconds "$tmp/p.json" | grep -v tokens_per) <(grep -v seconds "$tmp/q.json" | grep -v tokens_per) \
  || fail "progress changed the report"
echo "decon CLI: ok"
