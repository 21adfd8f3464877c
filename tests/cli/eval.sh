#!/usr/bin/env bash
# `replica eval` end to end on the tiny Olmo 3 fixture (vocabulary 512, so the bytes tokenizer with
# the fixture's EOS 510 / pad 511): perplexity and multiple-choice metrics in JSON, paired
# canaries, and clear errors (exit 2, file:line) for malformed sets, empty sets and items longer
# than the context.
set -euo pipefail
bin="$1"; root="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
model="$root/tests/data/olmo3/tiny-mha"

head -n 20 "$root/data/eval/sotu_heldout_ppl.jsonl" > "$tmp/held.jsonl"
head -n 10 "$root/data/eval/sotu_cloze.jsonl" > "$tmp/cloze.jsonl"
# 16 canary sequences of 32 ids below 510 (a fixed LCG; any random ids do).
perl -e '$x = 12345; for $i (0..15) { @t = map { $x = ($x * 1103515245 + 12345) % 2147483648; $x % 510 } 1..32;
  print "{\"id\":\"c$i\",\"tokens\":[", join(",", @t), "]}\n" }' > "$tmp/canary.jsonl"

"$bin" eval --model "$model" --tokenizer bytes --seq-len 256 --batch 4 \
  --eval "$tmp/held.jsonl" "$tmp/cloze.jsonl" --canaries "$tmp/canary.jsonl" --canary-vocab 510 \
  --json > "$tmp/out.json" || fail "eval exit $?"
perl -MJSON::PP -e 'local $/; my $j = JSON::PP->new->decode(<STDIN>); my $e = $j->{eval};
  my $h = $e->{held}; my $c = $e->{cloze}; my $k = $e->{canary};
  die "held kind\n" unless $h->{kind} eq "perplexity" && $h->{docs} == 20 && $h->{truncated_docs} == 20;
  die "held tokens $h->{tokens}\n" unless $h->{tokens} == 20 * 255;
  # An untrained model over 512 ids: cross-entropy near ln 512 = 6.24.
  die "held ce $h->{ce_loss}\n" unless $h->{ce_loss} > 5.5 && $h->{ce_loss} < 7.0;
  die "ppl\n" unless abs($h->{ppl} - exp($h->{ce_loss})) < 1e-6 * $h->{ppl};
  die "cloze\n" unless $c->{kind} eq "multiple_choice" && $c->{items} == 10;
  for my $m (qw(acc len_norm_acc)) { die "$m\n" unless $c->{$m} >= 0 && $c->{$m} <= 1; }
  die "bpb $c->{bpb}\n" unless $c->{bpb} > 5 && $c->{bpb} < 12;
  die "canary\n" unless $k->{docs} == 16 && !$k->{alarm} && $k->{registered_ce} > 5.5;
  die "seq_len\n" unless $j->{seq_len} == 256;' < "$tmp/out.json" || fail "eval report: $(cat "$tmp/out.json")"
"$bin" eval --model "$model" --tokenizer bytes --seq-len 256 --eval "$tmp/cloze.jsonl" | grep -q "acc" \
  || fail "human-readable output"

expect_error() {  # expect_error PATTERN ARGS...: exit 2 and PATTERN on stderr
  local pattern="$1"; shift
  set +e; "$bin" eval --model "${use_model:-$model}" "$@" > /dev/null 2> "$tmp/err"; local rc=$?; set -e
  [ "$rc" = 2 ] || fail "expected exit 2 for $*, got $rc: $(cat "$tmp/err")"
  grep -q -- "$pattern" "$tmp/err" || fail "expected '$pattern' for $*, got: $(cat "$tmp/err")"
}
printf '{"id":"a","text":"ok"}\n{"id":"b" "text":"x"}\n' > "$tmp/bad.jsonl"
expect_error "bad.jsonl:2: not valid JSON" --tokenizer bytes --seq-len 64 --eval "$tmp/bad.jsonl"
printf '{"id":"a","context":"c","choices":[" x"," y"],"gold":5}\n' > "$tmp/badgold.jsonl"
expect_error "badgold.jsonl:1: item \"a\" has gold 5 but only 2 choices" --tokenizer bytes --seq-len 64 --eval "$tmp/badgold.jsonl"
: > "$tmp/empty.jsonl"
expect_error "empty.jsonl: the evaluation set is empty" --tokenizer bytes --seq-len 64 --eval "$tmp/empty.jsonl"
expect_error "needs .* tokens (context" --tokenizer bytes --seq-len 32 --eval "$tmp/cloze.jsonl"
use_model="$tmp/nothing" expect_error "not a directory" --tokenizer bytes --eval "$tmp/held.jsonl"
# dolma2 ids do not fit a 512-id model: refused, not silently scored.
expect_error "outside the model's vocabulary" --seq-len 64 --eval "$tmp/held.jsonl" --tokenizer dolma2
# --truncate-context turns the long-item error into OLMES left-truncation.
"$bin" eval --model "$model" --tokenizer bytes --seq-len 32 --truncate-context --eval "$tmp/cloze.jsonl" \
  --json | perl -MJSON::PP -e 'local $/; my $j = JSON::PP->new->decode(<STDIN>);
  die unless $j->{eval}{cloze}{truncated_items} > 0' || fail "--truncate-context"
echo "eval CLI: ok"
