#pragma once
// The grid of a kernel sweep (sweep.h): which operation, shape, table key and table coordinates each point
// has. Built without CUDA too, so the CLI checks a grid (and counts its points) before touching a device.
#include <string>
#include <vector>

#include "dcpsim/hw/bench.h"
#include "dcpsim/hw/sweep.h"

namespace dcpsim::hw::detail {

struct SweepPoint {
  models::TableKernel kernel;
  std::string op;  // the `hw bench` operation that times it
  OpShape shape;
  std::string key;         // the table key (models::attention_table_key / merge_table_key)
  std::vector<double> at;  // the table coordinates
  std::string label;
  std::string pdl_key = {};  // with --pdl: the key of the same call timed after its like under PDL
};

// InputError for an empty list, a value < 1, a merge N < 2, a head dim other than 128/512, too few reps.
void check_grid(const KernelSweepConfig& c);
// Every point in sweep order (kernel, geometry or head dim, then the axes); points a kernel cannot run (A2A
// with N not dividing H, a KV cache over max_kv_bytes) go to `skipped` with the reason.
std::vector<SweepPoint> grid_points(const KernelSweepConfig& c, std::vector<std::string>* skipped);

}  // namespace dcpsim::hw::detail
