#include "common/dedup/dedup_params.h"

namespace suite::dedup {

std::string DedupParams::describe() const {
  return "v1 norm=" + norm.describe() + " shingle=" + shingle_kind_name(shingle.kind) +
         " ngram=" + std::to_string(shingle.n) + " bands=" + std::to_string(br.bands) +
         " rows=" + std::to_string(br.rows) + " seed=" + std::to_string(shingle.seed) + " text=" + text_key +
         " id=" + id_key;
}

}  // namespace suite::dedup
