#include "common/dedup/minhash_signatures.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/cli/error.h"
#include "common/io/input.h"
#include "common/jsonl/document_error.h"

namespace suite::dedup {
namespace {

template <class T>
void put(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
T get(const char*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

std::string_view text_of(JsonLine& doc, const DedupParams& params) {
  auto text = doc.string_field(params.text_key);
  if (!text) throw DocumentError("missing field", "no \"" + params.text_key + "\" field");
  return *text;
}

std::string_view raw_id(JsonLine& doc, const DedupParams& params) {
  std::string_view id;  // the last of a repeated key, as Python's json reads it
  for (const RawField& f : doc.raw_fields())
    if (f.key == params.id_key) id = f.raw_value;
  return id;
}

// Payload per document: key, length, exact lo/hi, u32 id length, u32 has-signature, id, bands.
class SignatureWorker final : public DocumentWorker {
 public:
  explicit SignatureWorker(const DedupParams& params)
      : params_(params), normalizer_(params.norm), hasher_(params.br, params.shingle.seed) {
    bands_.resize(params.br.bands);
  }
  void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) override {
    std::string_view text = text_of(doc, params_);
    std::string_view id = raw_id(doc, params_);
    normalizer_.normalize(text, norm_);
    XXH128_hash_t h = XXH3_128bits(norm_.data(), norm_.size());
    shingle_hashes(norm_, params_.shingle, shingles_);
    uint32_t has_sig = shingles_.empty() ? 0 : 1;
    put(out.payload, doc_key(where.input, where.line));
    put(out.payload, static_cast<uint64_t>(doc.line().size() + 1));
    put(out.payload, h.low64);
    put(out.payload, h.high64);
    put(out.payload, static_cast<uint32_t>(id.size()));
    put(out.payload, has_sig);
    out.payload.append(id);
    if (has_sig) {
      hasher_.signature(shingles_, sig_);
      hasher_.band_hashes(sig_, bands_);
      out.payload.append(reinterpret_cast<const char*>(bands_.data()), bands_.size() * sizeof(uint64_t));
    } else {
      out.counts.add("no signature (too short)");
    }
  }

 private:
  const DedupParams& params_;
  Normalizer normalizer_;
  MinHasher hasher_;
  std::string norm_;
  std::vector<uint64_t> shingles_, sig_, bands_;
};

class ShingleSetWorker final : public DocumentWorker {
 public:
  ShingleSetWorker(uint32_t file, const DedupParams& params, const std::vector<uint64_t>& keys)
      : file_(file), params_(params), keys_(keys), normalizer_(params.norm) {}
  void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) override {
    uint64_t key = doc_key(file_, where.line);
    if (!std::binary_search(keys_.begin(), keys_.end(), key)) return;
    normalizer_.normalize(text_of(doc, params_), norm_);
    shingle_set(norm_, params_.shingle, set_);
    put(out.payload, key);
    put(out.payload, static_cast<uint64_t>(set_.size()));
    out.payload.append(reinterpret_cast<const char*>(set_.data()), set_.size() * sizeof(uint64_t));
  }

 private:
  uint32_t file_;
  const DedupParams& params_;
  const std::vector<uint64_t>& keys_;
  Normalizer normalizer_;
  std::string norm_;
  std::vector<uint64_t> set_;
};

CommonOptions one_file(const CommonOptions& options, uint32_t f) {
  CommonOptions o = options;
  o.inputs = {options.inputs.at(f)};
  o.shard = Shard{};  // the keys to read are given
  return o;
}

}  // namespace

std::vector<uint32_t> read_signatures(const CommonOptions& options, const DedupParams& params, DocTable& table,
                                      std::vector<std::vector<BandRecord>>& bands, JsonlStats& stats) {
  const size_t nb = static_cast<size_t>(params.br.bands);
  bands.resize(nb);
  table.set_file_count(options.inputs.size());
  JsonlRunOptions run;
  run.print_summary = false;
  const std::vector<uint32_t> files = plan_shard(options.shard, options.inputs.size()).inputs;
  for (uint32_t f : files) {
    table.files()[f].file = f;
    table.files()[f].path = options.inputs[f];
  }
  JsonlStats s = run_jsonl(
      options, [&] { return std::make_unique<SignatureWorker>(params); },
      [&](ChunkOutput& out) {
        const char* p = out.payload.data();
        const char* end = p + out.payload.size();
        while (p < end) {
          uint64_t key = get<uint64_t>(p), len = get<uint64_t>(p);
          Hash128 h;
          h.lo = get<uint64_t>(p);
          h.hi = get<uint64_t>(p);
          uint32_t idlen = get<uint32_t>(p), has_sig = get<uint32_t>(p);
          table.add(key, len, h, std::string_view(p, idlen));
          p += idlen;
          if (has_sig)
            for (size_t b = 0; b < nb; ++b) bands[b].push_back(BandRecord{get<uint64_t>(p), key});
        }
      },
      run);
  stats.add(s);
  return files;
}

std::unordered_map<uint64_t, std::vector<uint64_t>> read_shingle_sets(const CommonOptions& options,
                                                                      const DedupParams& params,
                                                                      const std::vector<uint64_t>& keys) {
  std::unordered_map<uint64_t, std::vector<uint64_t>> sets;
  if (keys.empty()) return sets;
  JsonlRunOptions run;
  run.print_summary = false;
  CommonOptions o = options;
  o.on_error = options.on_error == OnError::kFail ? OnError::kSkip : options.on_error;  // already reported once
  uint32_t first = key_file(keys.front()), last = key_file(keys.back());
  for (uint32_t f = first; f <= last; ++f) {
    run_jsonl(
        one_file(o, f), [&, f] { return std::make_unique<ShingleSetWorker>(f, params, keys); },
        [&](ChunkOutput& out) {
          const char* p = out.payload.data();
          const char* end = p + out.payload.size();
          while (p < end) {
            uint64_t key = get<uint64_t>(p), n = get<uint64_t>(p);
            std::vector<uint64_t> v(n);
            std::memcpy(v.data(), p, n * sizeof(uint64_t));
            p += n * sizeof(uint64_t);
            sets.emplace(key, std::move(v));
          }
        },
        run);
  }
  return sets;
}

std::string spill_stdin(const std::string& dir) {
  std::string path = dir + "/minhash-dedup-stdin.XXXXXX";
  int fd = mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) throw ToolError(dir, std::string("cannot create a temporary file for stdin: ") + std::strerror(errno));
  // Unlinked at once: no exit, not even SIGKILL, can leave a copy of the input behind. The passes
  // reopen it through /proc/self/fd (a fresh file offset each), and messages call it <stdin>.
  ::unlink(path.c_str());
  const std::string reopen = "/proc/self/fd/" + std::to_string(fd);
  set_input_display_name(reopen, "<stdin>");
  auto in = open_input("-");
  std::string buf(1 << 20, '\0');
  size_t n;
  while ((n = in->read(buf.data(), buf.size())) > 0) {
    size_t off = 0;
    while (off < n) {
      ssize_t w = ::write(fd, buf.data() + off, n - off);
      if (w < 0) {
        int err = errno;
        ::close(fd);
        throw ToolError(dir, std::string("cannot spill stdin to a temporary file: ") + std::strerror(err));
      }
      off += static_cast<size_t>(w);
    }
  }
  return reopen;  // fd stays open (and the space held) until the process ends
}

}  // namespace suite::dedup
