# Build, test and run the suite. Everything is built out of tree under $(BUILD).
#
#   make            build every tool and gpt-train (CUDA parts only when nvcc is found)
#   make test       install missing packages, build, run unit, end-to-end and Slurm tests
#   make demo       the whole pipeline on data/sample, ending in a short training run
#   make deps       install the missing Debian packages (scripts/install-deps.sh)
#   make bench      benchmarks against the reference tools (scripts/bench/run-all.sh)
#   make bench-gpu  per-operation CUDA benchmarks against their CPU twins (running needs a GPU)
#   make flash-attention-bench   the flash attention kernel benchmark (build/bench/flash-attention-bench)
#   make test-gpu   CUDA kernel and training tests (needs a GPU)
#   make clean
#   make SANITIZE=address,undefined unit-test   sanitizer build of the unit tests (build-san/)
#
# Layout conventions, so that adding a file needs no Makefile edit:
#   common/**/*.cpp                 -> $(BUILD)/libcommon.a
#   train/**/*.cpp                  -> $(BUILD)/libtrain.a (CPU backend, always)
#   train/**/*.cu, kernels/**/*.cu  -> $(BUILD)/libtrain_cuda.a (only with nvcc)
#   tools/<name>/*.cpp              -> $(BUILD)/bin/<name>
#   tests/unit/**/*.cpp             -> $(BUILD)/bin/unit-tests (doctest)
#   tests/gpu/*.cpp,*.cu            -> $(BUILD)/bin/gpu-tests (only with nvcc)
#   scripts/bench/gpu/*_bench.cpp   -> $(BUILD)/bench/<name> (make bench-gpu, only with nvcc)
#   tests/fuzz/*_fuzz.cpp           -> $(BUILD)/fuzz/<name> (clang libFuzzer, make fuzz)
#   tests/dist/*.cpp                -> $(BUILD)/bin/dist-selftest (ranks for the e2e tests of train/dist)

SHELL := /bin/bash
SANITIZE ?=
ifneq ($(SANITIZE),)
BUILD ?= build-san
else
BUILD ?= build
endif
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

CXX ?= g++
# Sanitizers find the same faults unoptimised, and their build then compiles several times faster;
# their reports need only line tables (-g1), which compile faster again than full debug information.
ifneq ($(SANITIZE),)
OPT ?= -O0
DEBUG ?= -g1
endif
OPT ?= -O2
DEBUG ?= -g
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
ifneq ($(SANITIZE),)
NVCC :=
endif
ifeq ($(NO_CUDA),1)
NVCC :=
endif

ICU_CFLAGS := $(shell pkg-config --cflags icu-uc icu-i18n 2>/dev/null)
ICU_LIBS := $(shell pkg-config --libs icu-uc icu-i18n 2>/dev/null || echo -licui18n -licuuc -licudata)

CPPFLAGS += -I. -DSUITE_VERSION='"$(VERSION)"' -DSUITE_GIT_REV='"$(GIT_REV)"' $(ICU_CFLAGS)
CXXFLAGS ?= $(OPT) $(DEBUG)
CXXFLAGS += -std=c++20 -Wall -Wextra -Wno-unused-parameter -pthread -march=x86-64-v2 -MMD -MP
# --as-needed: a binary records only the libraries it uses (gpt-train runs where gumbo and CLD2 are absent)
LDFLAGS += -Wl,--as-needed
LDLIBS := -lsimdjson -lboost_program_options -lzstd -llzma -lbz2 -lz -lxxhash -lre2 -lgumbo -lcld2_full -lcld2 $(ICU_LIBS) -pthread
ifneq ($(SANITIZE),)
CXXFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

ifneq ($(NVCC),)
CUDA_ARCH ?= -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=compute_90
NVCCFLAGS ?= -O3 -std=c++20 -I. $(CUDA_ARCH) -Xcompiler -Wall,-Wno-unused-parameter -lineinfo --expt-relaxed-constexpr -MMD -MP
CPPFLAGS += -DGPT_HAVE_CUDA -I$(CUDA_HOME)/include
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart
NCCL_FOUND := $(shell test -e $(CUDA_HOME)/include/nccl.h -o -e /usr/include/nccl.h && echo 1)
ifeq ($(NCCL_FOUND),1)
CPPFLAGS += -DGPT_HAVE_NCCL
CUDA_LIBS += -lnccl
endif
endif

# Builds started by test/demo/bench use every core.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

find_src = $(shell find $(1) -name '$(2)' 2>/dev/null | LC_ALL=C sort)

# Narrow these to build part of the tree while other parts are being written,
# e.g. make BUILD=build-tok COMMON_DIRS=common/tokenizer UNIT_DIRS=tests/unit/tokenizer unit-test
COMMON_DIRS ?= common
TRAIN_DIRS ?= train
UNIT_DIRS ?= tests/unit
COMMON_SRC := $(call find_src,$(COMMON_DIRS),*.cpp)
TRAIN_SRC := $(call find_src,$(TRAIN_DIRS),*.cpp)
CUDA_SRC := $(if $(NVCC),$(call find_src,$(TRAIN_DIRS) kernels,*.cu))
UNIT_SRC := $(sort tests/unit/main.cpp $(call find_src,$(UNIT_DIRS),*.cpp))
DIST_SELFTEST_SRC := $(call find_src,tests/dist,*.cpp)
GPU_TEST_SRC := $(if $(NVCC),$(call find_src,tests/gpu,*.cpp) $(call find_src,tests/gpu,*.cu))
BENCH_GPU_SRC := $(if $(NVCC),$(call find_src,scripts/bench/gpu,*_bench.cpp))
BENCH_GPU_BINS := $(patsubst scripts/bench/gpu/%.cpp,$(BUILD)/bench/%,$(BENCH_GPU_SRC))
TOOLS := $(sort $(notdir $(patsubst %/,%,$(dir $(wildcard tools/*/main.cpp)))))
TOOL_BINS := $(addprefix $(BUILD)/bin/,$(TOOLS))

obj = $(patsubst %,$(BUILD)/obj/%.o,$(1))
COMMON_OBJ := $(call obj,$(COMMON_SRC))
TRAIN_OBJ := $(call obj,$(TRAIN_SRC))
CUDA_OBJ := $(call obj,$(CUDA_SRC))
UNIT_OBJ := $(call obj,$(UNIT_SRC))
GPU_TEST_OBJ := $(call obj,$(GPU_TEST_SRC))

.PHONY: all tools test unit-test e2e-test slurm-test demo deps bench bench-gpu test-gpu clean fuzz \
	flash-attention-bench
.DEFAULT_GOAL := all

all: $(TOOL_BINS)
tools: all

$(BUILD)/obj/%.cpp.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(filter-out -march=%,$(CPPFLAGS)) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/libcommon.a: $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libtrain.a: $(TRAIN_OBJ) $(CUDA_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Tool objects are reached only through the pattern rule below, which would make them intermediate
# (deleted after linking, then rebuilt by the next make, e.g. e2e-test after `make test`'s build).
.SECONDARY: $(call obj,$(call find_src,tools,*.cpp))

# Every tool links the common library; gpt-train also links the training library (and CUDA when built);
# gpt-launch takes train/launch/ from the training library and reads YAML with yaml-cpp; gpt-plan
# takes train/plan/ (YAML, and NCCL for its bandwidth measurement).
TOOL_LIBS = $(if $(filter gpt-train gpt-launch gpt-plan,$(1)),$(BUILD)/libtrain.a,) $(BUILD)/libcommon.a
YAML_LIBS := -lyaml-cpp
.SECONDEXPANSION:
$(BUILD)/bin/%: $$(call obj,$$(call find_src,tools/$$*,*.cpp)) $$(call TOOL_LIBS,$$*)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) $(CXXFLAGS) $^ -o $@ $(LDLIBS) $(if $(filter gpt-train gpt-plan,$*),$(CUDA_LIBS)) $(if $(filter gpt-launch gpt-plan,$*),$(YAML_LIBS))

$(BUILD)/bin/unit-tests: $(UNIT_OBJ) $(BUILD)/libtrain.a $(BUILD)/libcommon.a
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) $(CXXFLAGS) $^ -o $@ $(LDLIBS) $(CUDA_LIBS) $(YAML_LIBS)

$(BUILD)/bin/dist-selftest: $(call obj,$(DIST_SELFTEST_SRC)) $(BUILD)/libtrain.a $(BUILD)/libcommon.a
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) $(CXXFLAGS) $^ -o $@ $(LDLIBS) $(CUDA_LIBS)

$(BUILD)/bin/gpu-tests: $(GPU_TEST_OBJ) $(BUILD)/libtrain.a $(BUILD)/libcommon.a
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) $(CXXFLAGS) $^ -o $@ $(LDLIBS) $(CUDA_LIBS)

.SECONDARY: $(call obj,$(BENCH_GPU_SRC))
$(BUILD)/bench/%: $(BUILD)/obj/scripts/bench/gpu/%.cpp.o $(BUILD)/libtrain.a $(BUILD)/libcommon.a
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) $(CXXFLAGS) $^ -o $@ $(LDLIBS) $(CUDA_LIBS)

deps:
	@bash scripts/install-deps.sh

# Tests: unit tests (doctest), end-to-end shell tests over the built tools, then the Slurm tests.
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/bin/unit-tests $(BUILD)/bin/dist-selftest
	@$(MAKE) --no-print-directory unit-test e2e-test slurm-test

unit-test: $(BUILD)/bin/unit-tests
	$(BUILD)/bin/unit-tests --source-file='*' $(UNIT_ARGS)

e2e-test: all $(BUILD)/bin/dist-selftest
	@BIN=$(abspath $(BUILD)/bin) bash tests/e2e/run.sh $(E2E_ARGS)

# Against a private single-host Slurm that tests/slurm/run.sh starts and stops (needs root).
slurm-test: all
	@BIN=$(abspath $(BUILD)/bin) bash tests/slurm/run.sh $(SLURM_ARGS)

test-gpu: deps
	@test -n "$(NVCC)" || { echo "test-gpu: nvcc not found (CUDA toolkit at $(CUDA_HOME)?)"; exit 1; }
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/bin/gpu-tests
	$(BUILD)/bin/gpu-tests
	@BIN=$(abspath $(BUILD)/bin) bash tests/gpu/run.sh
	@BIN=$(abspath $(BUILD)/bin) bash tests/gpu/sample_corpus.sh

demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@BIN=$(abspath $(BUILD)/bin) bash scripts/demo.sh

bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@BIN=$(abspath $(BUILD)/bin) bash scripts/bench/run-all.sh

# Builds the per-operation GPU benchmarks, then runs each (scripts/bench/gpu/run.sh; without a
# visible GPU it says so and stops after the build).
bench-gpu:
	@test -n "$(NVCC)" || { echo "bench-gpu: nvcc not found (CUDA toolkit at $(CUDA_HOME)?)"; exit 1; }
	@$(MAKE) --no-print-directory -j$(JOBS) $(BENCH_GPU_BINS)
	@bash scripts/bench/gpu/run.sh $(BENCH_GPU_BINS)

# The flash attention kernel benchmark (scripts/bench/flash_attention_bench.cu, run by hand: its
# --help): one nvcc translation unit that includes the flash kernels' sources (to time them alone
# and to sweep their tile shapes), linked with the objects of the other kernels it calls.
FLASH_BENCH_OBJ := $(call obj,$(addprefix kernels/,cuda_common.cu matmul.cu lt_gemm.cu convert.cu \
	gelu.cu column_sum.cu attention.cu dropout.cu sm90/gemm_sm90.cu sm90/capability.cu sm90/tensor_map.cu))
flash-attention-bench: $(BUILD)/bench/flash-attention-bench
$(BUILD)/bench/flash-attention-bench: scripts/bench/flash_attention_bench.cu $(FLASH_BENCH_OBJ) \
		$(wildcard kernels/*.cuh kernels/*.h kernels/flash_attention*.cu kernels/sm90/flash_attention_sm90.c* \
		kernels/sm90/*.cuh)
	@test -n "$(NVCC)" || { echo "flash-attention-bench: nvcc not found (CUDA toolkit at $(CUDA_HOME)?)"; exit 1; }
	@mkdir -p $(dir $@)
	$(NVCC) $(filter-out -march=%,$(CPPFLAGS)) $(filter-out -MMD -MP,$(NVCCFLAGS)) $< $(FLASH_BENCH_OBJ) \
		-L$(CUDA_HOME)/lib64 -lcublasLt -lcublas -o $@

# libFuzzer targets need clang; each is run for FUZZ_SECONDS by tests/fuzz/run.sh.
FUZZ_SRC := $(call find_src,tests/fuzz,*_fuzz.cpp)
fuzz:
	@BUILD=$(BUILD) CPPFLAGS='$(subst ',,$(CPPFLAGS))' LDLIBS="$(LDLIBS)" COMMON_SRC="$(COMMON_SRC)" bash tests/fuzz/run.sh $(FUZZ_SRC)

clean:
	rm -rf build build-san build-*

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
