#include "common/dedup/doc_table.h"

#include <algorithm>
#include <numeric>

#include "common/cli/error.h"
#include "common/jsonl/json_writer.h"
#include "common/dedup/dedup_params.h"

namespace suite::dedup {

void DocTable::add(uint64_t key, uint64_t length, Hash128 exact, std::string_view id_raw) {
  keys_.push_back(key);
  lengths_.push_back(length);
  exact_.push_back(exact);
  ids_.append(id_raw);
  id_end_.push_back(ids_.size());
  note_line(key);
}

void DocTable::note_line(uint64_t key) {
  uint32_t f = key_file(key);
  if (f >= files_.size()) files_.resize(f + 1);
  files_[f].file = f;
  files_[f].last_line = std::max(files_[f].last_line, key_line(key));
}

uint32_t DocTable::index_of(uint64_t key) const {
  auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  if (it == keys_.end() || *it != key)
    throw ToolError("band record for unknown document (file " + std::to_string(key_file(key)) + ", line " +
                    std::to_string(key_line(key)) + "): band and docs files come from different runs");
  return static_cast<uint32_t>(it - keys_.begin());
}

void DocTable::sort_by_key() {
  if (std::is_sorted(keys_.begin(), keys_.end())) return;
  std::vector<uint32_t> order(keys_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys_[a] < keys_[b]; });
  DocTable t;
  t.files_ = files_;
  for (uint32_t i : order) t.add(keys_[i], lengths_[i], exact_[i], id_raw(i));
  *this = std::move(t);
}

void DocTable::compute_offsets() {
  offsets_.assign(files_.size() + 1, 0);
  for (size_t f = 0; f < files_.size(); ++f) offsets_[f + 1] = offsets_[f] + files_[f].last_line;
}

uint64_t DocTable::global_index(size_t i) const {
  uint64_t k = keys_[i];
  return offsets_[key_file(k)] + key_line(k) - 1;
}

void DocTable::append_id(std::string& out, size_t i) const {
  std::string_view raw = id_raw(i);
  if (raw.empty())
    append_uint(out, global_index(i));
  else
    out += raw;
}

void DocTable::write(const std::string& path, const FileHeader& header, const std::vector<uint32_t>& own_files) const {
  BinaryWriter w(path);
  FileHeader h = header;
  h.magic = kDocsMagic;
  h.count = keys_.size();
  w.header(h);
  w.u32(static_cast<uint32_t>(own_files.size()));
  for (uint32_t f : own_files) {
    w.u32(f);
    w.u64(f < files_.size() ? files_[f].last_line : 0);
    w.str(f < files_.size() ? files_[f].path : std::string());
  }
  for (size_t i = 0; i < keys_.size(); ++i) {
    w.u64(keys_[i]);
    w.u64(lengths_[i]);
    w.u64(exact_[i].lo);
    w.u64(exact_[i].hi);
    std::string id(id_raw(i));
    w.str(id);
  }
  w.finish();
}

void DocTable::load(const std::string& path, const std::string& params, FileHeader* header_out) {
  BinaryReader in(path);
  FileHeader h = in.header(kDocsMagic, params);
  uint32_t nfiles = in.u32();
  for (uint32_t k = 0; k < nfiles; ++k) {
    uint32_t f = in.u32();
    uint64_t last = in.u64();
    std::string p = in.str();
    if (f >= files_.size()) files_.resize(f + 1);
    files_[f] = FileExtent{f, std::max(files_[f].last_line, last), p};
  }
  std::string id;
  for (uint64_t i = 0; i < h.count; ++i) {
    uint64_t key = in.u64(), len = in.u64();
    Hash128 e;
    e.lo = in.u64();
    e.hi = in.u64();
    id = in.str();
    keys_.push_back(key);
    lengths_.push_back(len);
    exact_.push_back(e);
    ids_.append(id);
    id_end_.push_back(ids_.size());
  }
  if (header_out) *header_out = h;
}

}  // namespace suite::dedup
