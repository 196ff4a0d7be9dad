// Oracles for test_bpe_differential.sh and scripts/bench/bpe.sh (npm tiktoken-rs and HF tokenizers,
// installed under build/ by the caller; NODE_PATH points at their node_modules).
//
//   node bpe_diff.mjs gen SEED N OUT.jsonl            random strings {"text": ...}, fixed seed
//   node bpe_diff.mjs check VOCAB MERGES IN.jsonl IDS.jsonl   compare "ids" with tiktoken-rs and HF
//   node bpe_diff.mjs train FILE OUT_DIR               HF BpeTrainer (train(files), defaults) -> merges.txt, vocab.json
//   node bpe_diff.mjs bench-tiktoken FILE.jsonl        tiktoken-rs encode of every "text", one thread; prints seconds
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(import.meta.url);
const modules = process.env.NODE_PATH || "";
const need = (name) => require(path.join(modules, name));
const tiktoken = () =>
  need("tiktoken-rs-node-linux-x64-gnu/tiktoken-rs-node.linux-x64-gnu.node").getEncoding("gpt2");
const hf = () => need("tokenizers");

// ---- random strings -------------------------------------------------------------------------
function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WHITESPACE = [0x9, 0xa, 0xb, 0xc, 0xd, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
  0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000];
// Look-alikes that are NOT White_Space (python `re` / JS disagree on some of these).
const NOT_SPACE = [0x1c, 0x1d, 0x1e, 0x1f, 0x200b, 0x180e, 0xfeff, 0x00ad, 0x200d, 0x2060];
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'LL", "’s", "'", "''"];
const WORDS = ["hello", "world", "don", "can", "I", "we", "The", "naïve", "café", "Straße", "日本語", "русский",
  "Ελληνικά", "हिन्दी", "ไทย", "العربية", "한국어", "🙂", "👨‍👩‍👧", "e\u0301", "ﬁ", "Ⅻ", "½", "²", "١٢٣", "123", "3.14",
  "<|endoftext", "|>", "<|", "_", "--", "...", "http://x.y/z?a=1", "\u00a0", "\r\n", "\t", "  "];
// Code point ranges to draw from: [lo, hi].
const RANGES = [[0x21, 0x7e], [0xa1, 0x24f], [0x300, 0x36f], [0x370, 0x52f], [0x590, 0x6ff], [0x900, 0x97f],
  [0xe00, 0xe7f], [0x1100, 0x11ff], [0x2000, 0x206f], [0x2070, 0x218f], [0x2460, 0x24ff], [0x2e80, 0x2fdf],
  [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0xe000, 0xf8ff], [0xfb00, 0xfdff], [0xfe00, 0xffef],
  [0x10000, 0x1034f], [0x1d400, 0x1d7ff], [0x1f300, 0x1faff], [0x20000, 0x2a6df], [0xe0000, 0xe01ef]];

function randomCodePoint(rand) {
  const r = rand();
  if (r < 0.85) {
    const [lo, hi] = RANGES[Math.floor(rand() * RANGES.length)];
    return lo + Math.floor(rand() * (hi - lo + 1));
  }
  // Anything in planes 0-2 (assigned or not), minus surrogates.
  for (;;) {
    const cp = Math.floor(rand() * 0x30000);
    if (cp < 0xd800 || cp > 0xdfff) return cp;
  }
}

function randomString(rand) {
  const pick = (a) => a[Math.floor(rand() * a.length)];
  const parts = [];
  const n = 1 + Math.floor(rand() * 12);
  for (let i = 0; i < n; ++i) {
    const r = rand();
    if (r < 0.2) parts.push(pick(WORDS));
    else if (r < 0.3) parts.push(pick(CONTRACTIONS));
    else if (r < 0.45) {
      const len = 1 + Math.floor(rand() * 6);
      for (let k = 0; k < len; ++k) parts.push(String.fromCodePoint(pick(rand() < 0.8 ? WHITESPACE : NOT_SPACE)));
    } else if (r < 0.5) {
      // Long runs of one character (whitespace, letters, digits, punctuation).
      const c = String.fromCodePoint(pick([0x20, 0xa, 0x61, 0x30, 0x5e, 0x2e, 0x4e00, 0x3000, 0x1f642]));
      parts.push(c.repeat(1 + Math.floor(rand() * 600)));
    } else if (r < 0.6) parts.push(" ");
    else {
      const len = 1 + Math.floor(rand() * 8);
      for (let k = 0; k < len; ++k) parts.push(String.fromCodePoint(randomCodePoint(rand)));
    }
  }
  // tiktoken-rs always treats <|endoftext|> as special: keep it out (allow-special is tested elsewhere).
  return parts.join("").replaceAll("<|endoftext|>", "<|endoftext |>");
}

// ---- modes ------------------------------------------------------------------------------------
async function hfEncoder(vocab, merges) {
  const t = hf();
  const tok = new t.Tokenizer(await t.BPE.fromFile(vocab, merges));
  tok.setPreTokenizer(t.byteLevelPreTokenizer(false, true));
  return tok;
}

const readJsonl = (file) =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l.length).map((l) => JSON.parse(l));

async function main() {
  const [mode, ...args] = process.argv.slice(2);
  if (mode === "gen") {
    const [seed, n, out] = args;
    const rand = mulberry32(Number(seed));
    const lines = [];
    for (let i = 0; i < Number(n); ++i) lines.push(JSON.stringify({ n: i, text: randomString(rand) }));
    fs.writeFileSync(out, lines.join("\n") + "\n");
  } else if (mode === "check") {
    const [vocab, merges, input, ids] = args;
    const docs = readJsonl(input), ours = readJsonl(ids);
    if (docs.length !== ours.length) throw new Error(`${docs.length} inputs but ${ours.length} outputs`);
    const tk = tiktoken(), tok = await hfEncoder(vocab, merges);
    const texts = docs.map((d) => d.text);
    const hfIds = (await tok.encodeBatch(texts)).map((e) => e.getIds());
    let bad = 0;
    for (let i = 0; i < docs.length; ++i) {
      const want = texts[i].includes("<|endoftext|>") ? [] : Array.from(tk.encode(texts[i]));
      const got = ours[i].ids;
      // tiktoken-rs cannot encode <|endoftext|> as ordinary text; HF (no added tokens) can.
      const oracles = texts[i].includes("<|endoftext|>") ? [] : [["tiktoken-rs", want]];
      for (const [name, ref] of [...oracles, ["HF tokenizers", hfIds[i]]]) {
        if (JSON.stringify(ref) === JSON.stringify(got)) continue;
        if (++bad <= 5) console.error(`line ${i + 1}: ${JSON.stringify(texts[i])}\n  ${name}: ${ref}\n  bpe-encode: ${got}`);
      }
    }
    console.log(`${docs.length} strings, ${docs.reduce((s, d) => s + Buffer.byteLength(d.text), 0)} bytes, ${bad} mismatches`);
    if (bad) process.exit(1);
  } else if (mode === "train") {
    const [file, outDir] = args;
    const t = hf();
    const tok = new t.Tokenizer(t.BPE.empty());
    tok.setPreTokenizer(t.byteLevelPreTokenizer(false, true));
    tok.train([file]);
    fs.mkdirSync(outDir, { recursive: true });
    tok.save(path.join(outDir, "tokenizer.json"));
    const model = JSON.parse(fs.readFileSync(path.join(outDir, "tokenizer.json"), "utf8")).model;
    const merges = model.merges.map((m) => (Array.isArray(m) ? m.join(" ") : m));
    fs.writeFileSync(path.join(outDir, "merges.txt"), "#version: 0.2\n" + merges.join("\n") + "\n");
    fs.writeFileSync(path.join(outDir, "vocab.json"), JSON.stringify(model.vocab));
  } else if (mode === "bench-tiktoken") {
    const texts = readJsonl(args[0]).map((d) => d.text);
    const tk = tiktoken();
    const start = process.hrtime.bigint();
    let tokens = 0;
    for (const s of texts) tokens += tk.encode(s).length;
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    console.log(`${seconds.toFixed(3)} ${tokens}`);
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
