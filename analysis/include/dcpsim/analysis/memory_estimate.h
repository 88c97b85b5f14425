#pragma once
// What each command will hold in host memory at its peak, estimated from the sizes its inputs expand to
// before it reads them, and refused in one line (estimate and limit, memory::require_host) when this machine
// cannot hold it. The factors are bytes held per byte of (decompressed) input, measured with /usr/bin/time on
// inputs of 75-90 MB and checked at 1 GB (docs/PERFORMANCE.md, "Host memory of the readers").
#include <string>
#include <vector>

namespace dcpsim::analysis::memory_estimate {

// import --kineto: 2.5 bytes per byte of JSON and 440 bytes per event (fitted on traces of 150 and 300 bytes
// per event); events are counted in a first pass over large files, else taken as one per 150 bytes.
inline constexpr double kKinetoJson = 2.5, kKinetoEvent = 440, kKinetoMinEventBytes = 150;
inline constexpr double kNsysGzip = 3.0;       // import --nsys, gzip: the text, SQLite's copy, the events
inline constexpr double kNsysPlain = 1.0;      // import --nsys, a file SQLite pages in: the events
inline constexpr double kPartialsJson = 3.3;   // merge: the JSON document and the partials
inline constexpr double kMeasuredTrace = 4.5;  // validate, calibrate, tables, replay .pb: the sections
inline constexpr double kChromeExport = 9.8;   // export --chrome: one section's slices as JSON, placed
inline constexpr double kRequestTrace = 1.1;   // replay: the requests

// The bytes `path` expands to when read (its size, or a gzip's ISIZE); 0 for "" or what cannot be read.
double expanded_bytes(const std::string& path);
double expanded_bytes(const std::vector<std::string>& paths);  // directories: their trace files

// memory::require_host(factor × bytes, "dcpsim <what>"), for a reader whose need grows with its input.
void require_for_input(const std::string& what, double factor, double bytes);

// import --kineto: bytes and events of the file (counted when it expands past 64 MB).
void require_for_kineto(const std::string& path);

}  // namespace dcpsim::analysis::memory_estimate
