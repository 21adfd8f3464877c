#!/usr/bin/env bash
# The leak guard inside `replica train` (eval.leak_guard), end to end on a tiny model with the bytes
# tokenizer: a clean run trains, evaluates the held-out set and the canaries, and reports zero
# leaks; a training shard into which held-out passages were mixed stops the run (exit 2) at the
# first batch that carries one, naming the step, the instance and the eval item; `warn` finishes
# and warns; an eval file listed as training data is refused before training starts.
set -euo pipefail
bin="$1"; root="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"

# Bytes -> uint32 ids, documents separated by EOS 510 (the tiny model's); perl-base is Essential.
tokens() { perl -ne 'BEGIN{binmode STDOUT} chomp; print pack("V*", unpack("C*", $_), 510)'; }
text_of() { perl -MJSON::PP -ne 'BEGIN{binmode STDOUT, ":encoding(UTF-8)"} print JSON::PP->new->utf8->decode($_)->{text}, "\n"'; }
head -n 40 "$root/data/eval/sotu_heldout_ppl.jsonl" > held.jsonl
perl -e '$x = 7; for $i (0..15) { @t = map { $x = ($x * 1103515245 + 12345) % 2147483648; $x % 256 } 1..32;
  print "{\"id\":\"c$i\",\"tokens\":[", join(",", @t), "]}\n" }' > canary.jsonl
zstd -dc "$root/data/corpus/moby_dick.jsonl.zst" | text_of > moby.txt
head -c 300000 moby.txt | tokens > clean.npy
# The misconfigured shard: the same text with a held-out passage spliced in every 150 lines.
text_of < held.jsonl > held.txt
head -c 300000 moby.txt | awk 'NR % 150 == 0 { if ((getline p < "held.txt") > 0) print p } 1' | tokens > dirty.npy

cat > tiny.yaml <<'YAML'
model: {model_type: olmo3, vocab_size: 512, hidden_size: 64, intermediate_size: 128,
        num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: 4, rms_norm_eps: 1.0e-6,
        rope_theta: 10000, sliding_window: 16, max_position_embeddings: 64, pad_token_id: 511,
        eos_token_id: 510, bos_token_id: null}
data: {paths: [clean.npy], seq_len: 64, seed: 3}
train: {max_steps: 30, global_batch_instances: 4, micro_batch_instances: 4, threads: 1}
optim: {lr: 1.0e-3, schedule: {type: constant}}
checkpoint: {interval: 0, keep: 1}
eval: {interval: 15, sets: [held.jsonl], tokenizer: bytes, canaries: canary.jsonl, leak_guard: stop}
YAML

"$bin" train tiny.yaml --run-dir clean --quiet > clean.out 2> clean.err || fail "clean run: $(cat clean.err)"
grep -q "leak guard (stop): 30 batches scanned, 0 leaks" clean.err || fail "clean guard line: $(cat clean.err)"
[ "$(grep -c '"eval"' clean/metrics.jsonl)" = 2 ] || fail "expected eval lines at steps 15 and 30"
perl -MJSON::PP -ne 'my $j = JSON::PP->new->decode($_); next unless $j->{eval};
  die "held\n" unless $j->{eval}{held}{docs} == 40 && $j->{eval}{held}{ce_loss} > 0;
  die "canary\n" unless $j->{eval}{canary}{docs} == 16;' clean/metrics.jsonl || fail "eval lines"

set +e; "$bin" train tiny.yaml --run-dir dirty --quiet --set 'data.paths=[dirty.npy]' > dirty.out 2> dirty.err; rc=$?; set -e
[ "$rc" = 2 ] || fail "dirty run: expected exit 2, got $rc: $(tail -3 dirty.err)"
grep -Eq 'leak guard: step [0-9]+: instance [0-9]+ \(batch row [0-9]\) carries eval item "sotu/[^"]+" of .*held.jsonl' dirty.err \
  || fail "dirty message: $(tail -3 dirty.err)"
step=$(grep -Eo 'leak guard: step [0-9]+' dirty.err | head -1 | grep -Eo '[0-9]+')
# The run stopped before training on that batch: no metrics line for it.
if [ -f dirty/metrics.jsonl ] && grep -q "\"step\":$step," dirty/metrics.jsonl; then fail "step $step was trained"; fi

"$bin" train tiny.yaml --run-dir warn --quiet --set 'data.paths=[dirty.npy]' --set eval.leak_guard=warn \
  > warn.out 2> warn.err || fail "warn run: $(tail -3 warn.err)"
grep -Eq 'leak guard \(warn\): 30 batches scanned, [1-9][0-9]* leaks' warn.err || fail "warn summary: $(tail -3 warn.err)"

set +e; "$bin" train tiny.yaml --run-dir same --quiet --set 'data.paths=[clean.npy, canary.jsonl]' > same.out 2> same.err; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "is the evaluation file" same.err || fail "eval file as training data: rc $rc, $(cat same.err)"
set +e; "$bin" train tiny.yaml --run-dir bad --quiet --set eval.leak_guard=maybe > /dev/null 2> bad.err; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "eval.leak_guard" bad.err || fail "bad leak_guard value: rc $rc"
# Rerunning a finished run trains nothing: no leak-guard summary line then.
short=(--quiet --set train.max_steps=2 --set checkpoint.interval=2 --set eval.interval=0)
"$bin" train tiny.yaml --run-dir done "${short[@]}" > /dev/null 2> done1.err || fail "short run: $(tail -3 done1.err)"
grep -q "leak guard (stop): 2 batches scanned" done1.err || fail "short run guard line: $(tail -3 done1.err)"
"$bin" train tiny.yaml --run-dir done "${short[@]}" > /dev/null 2> done2.err || fail "rerun: $(tail -3 done2.err)"
if grep -q "leak guard (" done2.err; then fail "finished rerun printed: $(grep 'leak guard (' done2.err)"; fi
echo "leak guard in train: ok (dirty run stopped at step $step)"
