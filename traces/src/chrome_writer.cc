#include "dcpsim/traces/chrome_writer.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "dcpsim/error.h"
#include "dcpsim/traces/trace_reader.h"
#include "temp_file.h"
#include "trace_checker.h"

namespace dcpsim::traces {
namespace {

using nlohmann::json;

constexpr const char* kScenarioLane = "scenario";
constexpr const char* kRowsLane = "rows";

// A schema message as JSON, through Protobuf's own JSON mapping (field names as in the .proto).
json to_json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(message, &text, options).ok()) {
    throw RuntimeError("cannot convert a " + message.GetTypeName() + " record to JSON");
  }
  return json::parse(text);
}

json metadata(const char* what, int pid, int tid, json args) {
  json m = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", std::move(args)}};
  if (tid >= 0) m["tid"] = tid;
  return m;
}

void require(const std::string& why, const std::filesystem::path& path) {
  if (!why.empty()) throw RuntimeError("Chrome trace writer for '" + path.string() + "': " + why);
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::filesystem::path path)
    : path_(std::move(path)), checker_(std::make_unique<TraceChecker>()) {
  file_ = open_temp_beside(path_, temp_path_);
  static constexpr std::string_view kOpen = "{\"traceEvents\":[\n";
  std::fwrite(kOpen.data(), 1, kOpen.size(), file_);
  other_data_["sections"] = json::array();
}

ChromeTraceWriter::~ChromeTraceWriter() {
  discard();
}

void ChromeTraceWriter::discard() noexcept {
  discard_temp(file_, temp_path_);
}

// The envelope around the event array is the only JSON written by hand; each event is serialised by
// nlohmann_json as it arrives so that a long trace never sits in memory as one document.
void ChromeTraceWriter::emit(const json& event) {
  if (file_ == nullptr)
    throw RuntimeError("Chrome trace writer for '" + path_.string() + "' is already closed");
  std::string text = event.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!first_event_) text.insert(0, ",\n");
  first_event_ = false;
  std::fwrite(text.data(), 1, text.size(), file_);
}

// Threads of a rank in lane order, each lane's extra tracks right after it.
int ChromeTraceWriter::tid_for(int rank, const std::string& lane, int track) {
  auto [rank_it, new_rank] = lanes_.try_emplace(rank);
  if (new_rank) {
    emit(metadata("process_name", rank, -1, {{"name", "rank " + std::to_string(rank)}}));
    emit(metadata("process_sort_index", rank, -1, {{"sort_index", rank}}));
  }
  auto& lanes = rank_it->second;
  auto [lane_it, new_lane] = lanes.try_emplace(lane);
  Lane& l = lane_it->second;
  if (new_lane) l.order = static_cast<int>(lanes.size()) - 1;
  while (static_cast<int>(l.tids.size()) <= track) {
    const int k = static_cast<int>(l.tids.size());
    const int tid = ++next_tid_[rank];
    l.tids.push_back(tid);
    const std::string name = k == 0 ? lane : lane + " (" + std::to_string(k + 1) + ")";
    emit(metadata("thread_name", rank, tid, {{"name", name}}));
    emit(metadata("thread_sort_index", rank, tid, {{"sort_index", l.order * 1000 + k}}));
  }
  return l.tids[track];
}

double ChromeTraceWriter::us(std::int64_t section_ns) const {
  return static_cast<double>(section_offset_ns_ + section_ns) / 1000.0;
}

void ChromeTraceWriter::on_header(const v1::Header& header) {
  require(checker_->header(header), path_);
  other_data_["header"] = to_json(header);
}

void ChromeTraceWriter::on_scenario(const v1::Scenario& scenario) {
  require(checker_->scenario(scenario), path_);
  close_section();
  in_section_ = true;
  ++section_index_;
  section_label_ = describe(scenario);
  shown_repetition_ = 0;
  if (const auto it = scenario.params().find("timeline_repetition"); it != scenario.params().end()) {
    try {
      shown_repetition_ = std::stoi(it->second);
    } catch (const std::exception&) {
      shown_repetition_ = 0;
    }
  }
  tid_for(0, kScenarioLane);  // first lane of rank 0, so the section markers sit on top
  other_data_["sections"].push_back(
      {{"label", section_label_}, {"offset_us", us(0)}, {"scenario", to_json(scenario)}});
}

void ChromeTraceWriter::add_slice(int rank, const std::string& lane, std::int64_t start_ns,
                                  std::int64_t end_ns, json event, const std::uint64_t* id) {
  tid_for(rank, lane);  // lanes are ordered by first appearance
  if (id != nullptr) slices_by_id_[*id] = slices_.size();
  slices_.push_back(Slice{rank, lane, start_ns, end_ns, std::move(event), 0});
  section_end_ns_ = std::max(section_end_ns_, end_ns);
}

// Lays the section's slices on threads: per lane, in order of start (the longer first at equal starts), each
// on the first track whose open slices it nests in once those that ended by its start are closed.
void ChromeTraceWriter::place_slices() {
  std::vector<std::size_t> order(slices_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Slice& x = slices_[a];
    const Slice& y = slices_[b];
    if (x.rank != y.rank) return x.rank < y.rank;
    if (x.lane != y.lane) return x.lane < y.lane;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.end_ns > y.end_ns;
  });
  std::vector<std::vector<std::int64_t>> open;  // per track of the current lane: ends of the nested slices
  for (std::size_t k = 0; k < order.size(); ++k) {
    Slice& sl = slices_[order[k]];
    if (k == 0 || sl.rank != slices_[order[k - 1]].rank || sl.lane != slices_[order[k - 1]].lane)
      open.clear();
    std::size_t track = 0;
    for (; track < open.size(); ++track) {
      std::vector<std::int64_t>& ends = open[track];
      while (!ends.empty() && ends.back() <= sl.start_ns) ends.pop_back();
      if (ends.empty() || sl.end_ns <= ends.back()) break;
    }
    if (track == open.size()) open.emplace_back();
    open[track].push_back(sl.end_ns);
    sl.tid = tid_for(sl.rank, sl.lane, static_cast<int>(track));
  }
  for (std::size_t i : order) {
    Slice& sl = slices_[i];
    sl.event["pid"] = sl.rank;
    sl.event["tid"] = sl.tid;
    emit(sl.event);
  }
}

void ChromeTraceWriter::close_section() {
  place_slices();
  for (const v1::Flow& f : flows_) emit_flow(f);
  slices_.clear();
  slices_by_id_.clear();
  flows_.clear();
  if (!in_section_) return;
  emit({{"ph", "X"},
        {"name", section_label_},
        {"cat", "scenario"},
        {"pid", 0},
        {"tid", tid_for(0, kScenarioLane)},
        {"ts", us(0)},
        {"dur", static_cast<double>(section_end_ns_) / 1000.0},
        {"args", {{"section", section_index_}}}});
  section_offset_ns_ += section_end_ns_ + kSectionGapNs;
  section_end_ns_ = 0;
  in_section_ = false;
}

void ChromeTraceWriter::on_event(const v1::Event& e) {
  require(checker_->event(e), path_);
  json args = {{"kind", to_string(e.kind())}, {"bytes", e.bytes()}};
  if (e.has_rows()) args["rows"] = {{"begin", e.rows().begin()}, {"end", e.rows().end()}};
  if (e.has_id()) args["id"] = e.id();
  if (e.emulated()) args["emulated"] = true;
  for (const auto& [key, value] : e.args()) args.emplace(key, value);  // never overrides the typed fields
  std::string category(to_string(e.kind()));
  if (e.emulated()) category += ",emulated";
  json x = {{"ph", "X"},
            {"name", e.name()},
            {"cat", category},
            {"ts", us(e.start_ns())},
            {"dur", static_cast<double>(e.end_ns() - e.start_ns()) / 1000.0},
            {"args", std::move(args)}};
  const std::uint64_t id = e.id();
  add_slice(e.rank(), e.lane(), e.start_ns(), e.end_ns(), std::move(x), e.has_id() ? &id : nullptr);
}

void ChromeTraceWriter::on_gpu_activity(const v1::GpuActivity& a) {
  require(checker_->gpu_activity(a), path_);
  if (a.repetition() != shown_repetition_) return;
  json args = {{"phase", a.phase()}, {"device", a.device()}, {"correlation_id", a.correlation_id()}};
  if (a.kind() == v1::GpuActivity::KIND_KERNEL && a.grid_size() == 3 && a.block_size() == 3) {
    args["grid"] = {a.grid(0), a.grid(1), a.grid(2)};
    args["block"] = {a.block(0), a.block(1), a.block(2)};
    args["registers_per_thread"] = a.registers_per_thread();
    args["shared_memory_bytes"] = a.shared_memory_bytes();
  }
  if (a.bytes() > 0) args["bytes"] = a.bytes();
  if (a.graph_node_id() != 0) args["graph_node_id"] = a.graph_node_id();
  json x = {{"ph", "X"},
            {"name", a.name()},
            {"cat", "gpu"},
            {"ts", us(a.start_ns())},
            {"dur", static_cast<double>(a.end_ns() - a.start_ns()) / 1000.0},
            {"args", std::move(args)}};
  add_slice(a.rank(), "gpu stream " + std::to_string(a.stream()), a.start_ns(), a.end_ns(), std::move(x),
            nullptr);
}

// The arrow leaves from the middle of the source slice and lands inside the target slice, no earlier than it
// left: "s" and "f" (with binding point "e") bind to the slices that enclose them.
void ChromeTraceWriter::on_flow(const v1::Flow& flow) {
  require(checker_->flow(flow), path_);
  flows_.push_back(flow);
}

void ChromeTraceWriter::emit_flow(const v1::Flow& flow) {
  const Slice& from = slices_.at(slices_by_id_.at(flow.from_event()));
  const Slice& to = slices_.at(slices_by_id_.at(flow.to_event()));
  const std::int64_t leave = from.start_ns + (from.end_ns - from.start_ns) / 2;
  const std::int64_t land = std::max(leave, std::clamp(leave, to.start_ns, to.end_ns));
  const std::uint64_t id = next_flow_id_++;
  const std::string name = flow.name().empty() ? "flow" : flow.name();
  const json args = {{"flow", flow.id()}, {"from_event", flow.from_event()}, {"to_event", flow.to_event()}};
  emit({{"ph", "s"},
        {"id", id},
        {"name", name},
        {"cat", "flow"},
        {"pid", from.rank},
        {"tid", from.tid},
        {"ts", us(leave)},
        {"args", args}});
  emit({{"ph", "f"},
        {"bp", "e"},
        {"id", id},
        {"name", name},
        {"cat", "flow"},
        {"pid", to.rank},
        {"tid", to.tid},
        {"ts", us(land)},
        {"args", args}});
}

void ChromeTraceWriter::on_row_result(const v1::RowResult& r) {
  require(checker_->row_result(r), path_);
  const int tid = tid_for(r.rank(), kRowsLane);
  const std::string row = std::to_string(r.row());
  for (auto [what, at] : {std::pair{"lse", r.lse_ready_ns()}, std::pair{"output", r.output_ready_ns()}}) {
    emit({{"ph", "i"},
          {"s", "t"},
          {"name", std::string(what) + " ready row " + row},
          {"cat", "row"},
          {"pid", r.rank()},
          {"tid", tid},
          {"ts", us(at)},
          {"args", {{"row", r.row()}, {"ready", what}}}});
    section_end_ns_ = std::max(section_end_ns_, at);
  }
}

void ChromeTraceWriter::on_phase_summary(const v1::PhaseSummary& p) {
  require(checker_->phase_summary(p), path_);
  other_data_["sections"].back()["phase_summaries"].push_back(to_json(p));
}

void ChromeTraceWriter::on_summary(const v1::Summary& s) {
  require(checker_->summary(s), path_);
  other_data_["sections"].back()["summaries"].push_back(to_json(s));
}

void ChromeTraceWriter::finish() {
  require(checker_->finish(), path_);
  close_section();
  const std::string tail = "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":" +
                           other_data_.dump(-1, ' ', false, json::error_handler_t::replace) + "}\n";
  std::fwrite(tail.data(), 1, tail.size(), file_);
  commit_temp(file_, temp_path_, path_);
  temp_path_.clear();
}

void export_chrome(const std::filesystem::path& in, const std::filesystem::path& out) {
  TraceReader reader(in);  // opened first: a bad input leaves no trace of an output behind
  ChromeTraceWriter writer(out);
  v1::Record record;
  while (reader.next(record)) deliver(record, writer);
  writer.finish();
}

}  // namespace dcpsim::traces
