// pti_usage.cpp - a third-party program written for Intel PTI's PC-sampling API, in PTI's own style
// (C++, #include "pti/pti_pc_sampling.h", only PTI names), following the usage sequence of
// spec/pti-pc-sampling-api.txt. It must compile against profagent's header without edits.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "pti/pti_pc_sampling.h"

#define PTI_THROW(X)                                                                  \
  do {                                                                                \
    pti_result r = (X);                                                               \
    if (r != PTI_SUCCESS) {                                                           \
      std::fprintf(stderr, "%s: %s\n", #X, ptiResultTypeToString(r));                 \
      return r == PTI_ERROR_PC_SAMPLING_UNSUPPORTED ? 3 : 1;                          \
    }                                                                                 \
  } while (0)

int main() {
  pti_pc_sampling_handle_t handle = nullptr;
  PTI_THROW(ptiPcSamplingEnable(&handle));
  PTI_THROW(ptiPcSamplingConfigure(handle, nullptr, 0, 0));
  size_t buffer_size = 0;
  if (ptiPcSamplingQueryCollectionBufferSize(handle, &buffer_size) != PTI_ERROR_NOT_IMPLEMENTED) return 1;
  if (ptiPcSamplingSetCollectionBufferSize(handle, 1 << 20) != PTI_ERROR_NOT_IMPLEMENTED) return 1;

  size_t reason_count = 0;
  PTI_THROW(ptiPcSamplingGetStallReasons(handle, nullptr, &reason_count));
  std::vector<pti_pc_sampling_stall_reason_info_t> reasons(reason_count);
  for (auto& r : reasons) r._struct_size = sizeof(pti_pc_sampling_stall_reason_info_t);
  PTI_THROW(ptiPcSamplingGetStallReasons(handle, reasons.data(), &reason_count));

  PTI_THROW(ptiPcSamplingStartCollection(handle));
  PTI_THROW(ptiPcSamplingStopCollection(handle));

  size_t device_count = 0;
  PTI_THROW(ptiPcSamplingGetProfiledDevices(handle, nullptr, &device_count));
  std::vector<pti_device_handle_t> devices(device_count);
  PTI_THROW(ptiPcSamplingGetProfiledDevices(handle, devices.data(), &device_count));
  for (auto device : devices) {
    pti_pc_sampling_device_status_t status{};
    status._struct_size = sizeof(status);
    PTI_THROW(ptiPcSamplingGetDeviceStatus(handle, device, &status));
    size_t kernel_count = 0;
    PTI_THROW(ptiPcSamplingGetObservedKernelHandles(handle, device, nullptr, &kernel_count));
    std::vector<uint64_t> kernels(kernel_count);
    PTI_THROW(ptiPcSamplingGetObservedKernelHandles(handle, device, kernels.data(), &kernel_count));
    for (auto kernel : kernels) {
      std::vector<uint64_t> aggregated(reason_count);
      pti_pc_sampling_kernel_info_t info{};
      info._struct_size = sizeof(info);
      info._aggregated_samples = aggregated.data();
      PTI_THROW(ptiPcSamplingGetObservedKernelInfo(handle, device, kernel, &info));
      std::vector<pti_pc_sampling_instruction_t> instructions(info._instructions_with_samples_count);
      std::vector<uint64_t> samples(info._instructions_with_samples_count * info._reason_count);
      PTI_THROW(ptiPcSamplingGetSamplesPerInstruction(handle, device, kernel, instructions.data(),
                                                      instructions.size(), samples.data(), samples.size()));
      for (size_t i = 0; i < instructions.size(); ++i) {
        const pti_pc_sampling_source_info_t* src = instructions[i]._source_info;
        std::printf("%s +0x%llx %s:%llu\n", info._kernel_name,
                    static_cast<unsigned long long>(instructions[i]._instruction_offset),
                    src && src->_file_path ? src->_file_path : "?",
                    static_cast<unsigned long long>(src ? src->_file_line : 0));
      }
    }
  }
  PTI_THROW(ptiPcSamplingDisable(handle));
  std::printf("pti usage: %zu reasons, %zu devices\n", reason_count, device_count);
  return 0;
}
