// Hugging Face GPT-2 interchange: config.json + model.safetensors.
//
// Names and layout are those of transformers' GPT2LMHeadModel (prefix "transformer."):
// wte [V, C] (vocabulary unpadded), wpe [maxT, C], h.{i}.ln_1, attn.c_attn [C, 3C],
// attn.c_proj [C, C], ln_2, mlp.c_fc [C, F], mlp.c_proj [F, C], ln_f. HF's Conv1D stores weights
// as [in, out], the transpose of ours; the q|k|v order of c_attn equals ours. lm_head is tied.
#pragma once

#include <string>

#include "train/model/config.h"
#include "train/model/layout.h"

namespace gpt {

// Writes DIR/config.json and DIR/model.safetensors (fp32).
void export_hf(const std::string& dir, const ModelConfig& config, const ParamLayout& layout,
               const float* params);

// --export-hf from a run at any layout (tensor/pipeline shards): the global tensors of the latest
// checkpoint in ckpt_dir (each rank saves its shards there first; then one rank calls this).
void export_hf_from_checkpoint(const std::string& ckpt_dir, const std::string& dir);

// Reads DIR/config.json and DIR/model.safetensors (F32, F16 or BF16 tensors; names with or without
// the "transformer." prefix) into params. The model shape of `config` must match config.json;
// otherwise ToolError names the field. Padded vocabulary rows are set to 0.
void load_hf(const std::string& dir, const ModelConfig& config, const ParamLayout& layout,
             float* params);

}  // namespace gpt
