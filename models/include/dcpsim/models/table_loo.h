// Leave-one-out on an attention or merge-kernel table: how well the table is read between its measured
// shapes, and the interpolation method (kernel_table.h TableInterpolation) that reads it best. Attention:
// each interior value of the heads axis, then of the rows axis, is left out in turn; every point measured
// there is priced from the rest (its neighbours now two grid steps apart) through the same lookup a step uses
// (decode_attention_time), and compared with its measurement. Merge tables: the same over every axis, priced
// by table_time_s. The method is chosen on the table's own points, never on held-out steps.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::models {

struct LeaveOneOut {
  int n = 0;            // points priced
  double median = 0.0;  // |priced / measured - 1|
  double p90 = 0.0;
};

// The attention shape an attention table's key describes ("mla qk576 d512 bf16 flashinfer",
// "gqa qk128 d128 g8 bf16 dcpsim"), at `heads` query heads; nullopt for a key of another form.
std::optional<AttentionShape> attention_shape_of_key(const std::string& key, int heads);

// Leave-one-out of the attention table `key` of `p`, read with `method`. n = 0 when `p` has no such table or
// it has fewer than three values on both axes.
LeaveOneOut attention_leave_one_out(const HardwareProfile& p, const std::string& key,
                                    TableInterpolation method);

struct InterpolationChoice {
  TableInterpolation method = TableInterpolation::kSchedule;
  std::string chosen_by;  // one line: the figures of every method and the rule
  std::string figures;    // "schedule 4.0% / 14.1%, power-law 2.0% / 16.0%, mean 1.6% / 7.3%" (median / p90)
  std::vector<std::pair<TableInterpolation, LeaveOneOut>> scores;
};

// The rule: among the methods whose p90 is within half a percentage point of the least, the one with the
// least median (the first listed on a tie); kSchedule for none.
TableInterpolation pick_interpolation(const std::vector<std::pair<TableInterpolation, LeaveOneOut>>& scores);

// The method of the three with the smallest p90 (where two are within half a percentage point, the one with
// the smaller median; the schedule before the others on a tie). nullopt for a table whose kernel has no
// schedule model (only FlashInfer's MLA kernel and dcpsim's kernels have one) or too few points to leave any
// out.
std::optional<InterpolationChoice> choose_attention_interpolation(const HardwareProfile& p,
                                                                  const std::string& key);

// Leave-one-out of a merge kernel's table (is_merge_kernel) read with `method` (kPowerLaw or kLinear): each
// interior value of each axis is left out in turn and every point measured there priced by table_time_s from
// the rest. n = 0 when no axis has three values.
LeaveOneOut merge_leave_one_out(const KernelTable& table, TableInterpolation method);

// The power law or the linear reading for a merge kernel's table, by the same rule as pick_interpolation (the
// power law first on a tie); nullopt for a table of another kernel or too few values to leave any out.
std::optional<InterpolationChoice> choose_merge_interpolation(const KernelTable& table);

// Every attention table of `tables` that has a schedule model, and every merge kernel's table, gets the
// method its leave-one-out chooses, read with `p` (a profile of the GPU that measured them; the tables are
// added to it for the choice). Returns one line per table changed or kept.
std::vector<std::string> choose_interpolations(const HardwareProfile& p, KernelTables& tables);

}  // namespace dcpsim::models
