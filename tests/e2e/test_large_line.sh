# A single 200 MB line is handled without crashing and within the documented memory
# (README: about 4x the longest line plus the chunk buffers).
python3 -c "
import sys
sys.stdout.write('{\"text\":\"' + 'abcdefghij' * 20000000 + '\"}\n')" > big.jsonl
/usr/bin/time -f '%M' -o rss.txt $BIN/jsonl-cat -q -i big.jsonl -o copy.jsonl 2>/dev/null || \
  $BIN/jsonl-cat -q -i big.jsonl -o copy.jsonl
same_file big.jsonl copy.jsonl
if [[ -s rss.txt ]]; then
  rss_kb=$(tail -1 rss.txt)
  echo "peak RSS for a 200 MB line: $((rss_kb / 1024)) MB"
  (( rss_kb < 1000 * 1024 )) || fail "peak RSS $((rss_kb / 1024)) MB exceeds 4x the line"
fi
