// One process per GPU under mpirun/srun (builds with DCPSIM_WITH_MPI): the NCCL id is broadcast through MPI,
// the strategy connects over the communicator exactly as with one thread per GPU (the direct merge's and
// FlashInfer's NCCL windows: nccl_window.h), and rank 0 gathers every rank's timings for the trace. Without
// MPI these entry points say how to get it.
#include <string>
#include <vector>

#include "check.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/hw/runner.h"
#include "exchange.h"
#include "nccl_window.h"
#include "step.h"
#include "timing.h"
#include "trace_out.h"

#if defined(DCPSIM_HW_MPI)
// The C API only: the deprecated C++ bindings of some MPIs do not compile warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace dcpsim::hw {

#if !defined(DCPSIM_HW_MPI)

MpiWorld mpi_init(int*, char***) {
  throw InputError("--mpi: this dcpsim was built without MPI (configure with -DDCPSIM_WITH_MPI=ON)");
}
void mpi_finalize() {}
void run_mpi(const StepPlan&, const RunConfig&, Samples&, std::vector<RankOutputs>&, GpuTimeline*) {
  throw InputError("--mpi: this dcpsim was built without MPI (configure with -DDCPSIM_WITH_MPI=ON)");
}

#else

namespace {

void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw RuntimeError(std::string("MPI error in ") + what);
}

int local_rank() {
  MPI_Comm local;
  mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local), "split");
  int r = 0;
  MPI_Comm_rank(local, &r);
  MPI_Comm_free(&local);
  return r;
}

// Rank 0 receives every rank's samples (durations, offsets, step spans) in one flat array per rank.
void gather_samples(const StepPlan& p, int rank, int size, Samples& s) {
  const std::size_t phases = p.phases.size(), reps = s.rank_step[rank].size();
  std::vector<double> mine;
  for (std::size_t i = 0; i < phases; ++i)
    mine.insert(mine.end(), s.duration[rank][i].begin(), s.duration[rank][i].end());
  for (std::size_t i = 0; i < phases; ++i)
    mine.insert(mine.end(), s.offset[rank][i].begin(), s.offset[rank][i].end());
  mine.insert(mine.end(), s.rank_step[rank].begin(), s.rank_step[rank].end());
  s.phase_origin[rank].resize(reps, 0.0);
  mine.insert(mine.end(), s.phase_origin[rank].begin(), s.phase_origin[rank].end());
  std::vector<double> all(rank == 0 ? mine.size() * size : 0);
  mpi_check(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                       static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD),
            "gather");
  if (rank != 0) return;
  for (int n = 1; n < size; ++n) {
    const double* base = all.data() + n * mine.size();
    for (std::size_t i = 0; i < phases; ++i) {
      s.duration[n][i].assign(base + i * reps, base + (i + 1) * reps);
      s.offset[n][i].assign(base + (phases + i) * reps, base + (phases + i + 1) * reps);
    }
    s.rank_step[n].assign(base + 2 * phases * reps, base + (2 * phases + 1) * reps);
    s.phase_origin[n].assign(base + (2 * phases + 1) * reps, base + (2 * phases + 2) * reps);
  }
}

}  // namespace

MpiWorld mpi_init(int* argc, char*** argv) {
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready) mpi_check(MPI_Init(argc, argv), "MPI_Init");
  MpiWorld w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
}

void mpi_finalize() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

void run_mpi(const StepPlan& p, const RunConfig& c, Samples& samples, std::vector<RankOutputs>& outputs,
             GpuTimeline* timeline) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != p.N)
    throw InputError("--dcp " + std::to_string(p.N) + " needs " + std::to_string(p.N) +
                     " MPI processes, got " + std::to_string(size));
  const int local = local_rank();
  const int count = device_count();
  if (count == 0) throw RuntimeError("no CUDA device is visible to MPI rank " + std::to_string(rank));
  const int device = c.devices.empty() ? local % count : c.devices.at(local);
  Ranks ranks;
  ranks.push_back(make_rank_state(p, c, rank, device, nullptr));
  RankState* state = ranks.front().get();
  prepare_rank(p, *state);
  state->timing = samples.timing;
  state->timeline = timeline;
  ncclUniqueId id{};
  if (rank == 0) DCPSIM_NCCL(ncclGetUniqueId(&id));
  mpi_check(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD), "bcast");
  ncclComm_t comm = nullptr;
  DCPSIM_NCCL(ncclCommInitRank(&comm, p.N, id, rank));
  NcclExchange ex({comm});
  NcclWindows windows;  // deregistered before the communicator is destroyed
  connect_ranks(p, c, ranks, {false, {comm}, &windows});
  samples.resize(p.N, p.phases.size());
  auto enqueue = [&](bool capturing) {
    enqueue_prologue(p, c, *state, capturing);
    for (std::size_t i = 0; i < p.phases.size(); ++i) enqueue_phase(p, c, i, *state, ex, capturing);
  };
  try {
    run_repetitions(
        state->stream, p.s.launch != models::LaunchMode::kEager, c.warmup, c.reps,
        120.0 + 4.0 * c.direct_timeout_ms / 1000.0, nullptr, timeline, rank, enqueue,
        [&] { check_direct_error(*state, c.direct_timeout_ms); }, [&] { samples.collect(*state); });
  } catch (...) {
    windows.abandon();
    ex.abort();
    throw;
  }
  outputs.push_back(download_outputs(p, *state, checked_rows(p, c.check_rows)));
  if (timeline != nullptr) timeline_samples(p, c, *timeline, samples);  // this rank's GPU activities only
  gather_samples(p, rank, size, samples);
}

#endif

}  // namespace dcpsim::hw
