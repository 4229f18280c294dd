# gpu.mk -- the CUDA part (src/gpu/, tests/gpu/, bench/gpu/), included by the
# Makefile. `make cuda` builds it when nvcc is found and says so (and does
# nothing else) when it is not; it is never part of the default build.
#   build/cuda/libveloxquant_cuda.a   kernels + C API (veloxquant_cuda.h)
#   build/cuda/test_gpu                GPU test (needs a GPU to run)
#   build/cuda/bench_gpu               GPU benchmark (needs a GPU to run)
NVCC       ?= nvcc
CUDA_ARCH  ?= -gencode=arch=compute_90,code=sm_90
NVCC_FLAGS ?= -O3 -std=c++17 $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-fPIC -Werror all-warnings -lineinfo
CUDA_BUILD := $(BUILD)/cuda
HAVE_NVCC  := $(shell command -v $(NVCC) 2>/dev/null)

CUDA_CU    := src/gpu/attention.cu src/gpu/attention_mma.cu src/gpu/attention_vecinfer.cu src/gpu/quantize.cu
CUDA_OBJ   := $(CUDA_CU:src/gpu/%.cu=$(CUDA_BUILD)/obj/%.o) $(CUDA_BUILD)/obj/format.o
CUDA_LIB   := $(CUDA_BUILD)/libveloxquant_cuda.a
CUDA_HDRS  := include/veloxquant_cuda.h $(wildcard src/gpu/*.cuh) src/codec/kivi_quant.h

.PHONY: cuda cuda-lib
ifneq ($(HAVE_NVCC),)
cuda: $(CUDA_LIB) $(CUDA_BUILD)/test_gpu $(CUDA_BUILD)/bench_gpu
cuda-lib: $(CUDA_LIB)
else
cuda cuda-lib:
	@echo "cuda: $(NVCC) not found; skipping the CUDA build"
endif

$(CUDA_BUILD)/obj/%.o: src/gpu/%.cu $(CUDA_HDRS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -Iinclude -Isrc -Isrc/gpu -c $< -o $@

$(CUDA_BUILD)/obj/format.o: src/gpu/host/format.c include/veloxquant_cuda.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(CUDA_LIB): $(CUDA_OBJ)
	rm -f $@
	ar rcs $@ $^

$(CUDA_BUILD)/test_gpu: tests/gpu/test_gpu.cu tests/gpu/gpu_host_util.h $(CUDA_LIB) $(STATIC) $(BUILD)/obj/tests/util/test.o
	$(NVCC) $(NVCC_FLAGS) -Iinclude -Itests/util -Itests/gpu -o $@ $< $(BUILD)/obj/tests/util/test.o $(CUDA_LIB) $(STATIC) -lm -lpthread

$(CUDA_BUILD)/bench_gpu: bench/gpu/bench_gpu.cu tests/gpu/gpu_host_util.h $(CUDA_LIB) $(STATIC)
	$(NVCC) $(NVCC_FLAGS) -Iinclude -Itests/gpu -o $@ $< $(CUDA_LIB) $(STATIC) -lm -lpthread
