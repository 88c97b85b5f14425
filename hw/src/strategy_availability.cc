// strategy_unavailable (runner.h): what a strategy needs beyond the scenario, answered without a device so
// that `hw run --strategy all` can skip a strategy with a notice and an explicit request can fail with a
// one-line input error before anything starts. Built in CPU-only builds too.
#include <string>

#include "dcpsim/hw/runner.h"

namespace dcpsim::hw {

std::string strategy_unavailable(models::Strategy s, ProcessMode mode, int dcp) {
  if (dcp < 2) return "";
  if (s == models::Strategy::kRowStream && mode != ProcessMode::kEmulate)
    return "row-stream runs with --emulate only (N ranks on one GPU); on several GPUs it waits for NCCL "
           "device-API windows";
  if (s != models::Strategy::kFlashInferA2a) return "";
#if !defined(DCPSIM_WITH_FLASHINFER)
  (void)mode;
  return "this dcpsim was built without FlashInfer's headers (-DDCPSIM_WITH_FLASHINFER=ON)";
#else
  if (mode == ProcessMode::kEmulate)
    return "FlashInfer's fused merge needs NCCL windows on N >= 2 GPUs of one NVLink domain (one thread or "
           "process per GPU); --emulate runs every rank on one GPU";
  return "";
#endif
}

}  // namespace dcpsim::hw
