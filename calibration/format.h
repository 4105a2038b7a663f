// How calibration shows what it fitted: the kinds of parameter and their
// printed units, the text `collkit calibrate` prints (format_calibration)
// and the fitted topology file in the base's form (fitted_topology_text),
// both declared in calibration/calibrate.h.
#pragma once

#include <string>

#include "calibration/calibrate.h"

namespace collkit {

// printf of one number.
std::string fmt(const char* format, double v);

// Latencies, the overhead and base latencies are times; link, reduction,
// copy and in-network bandwidths rates; the cache and written-data factors and core counts are
// printed as they are (unitless).
bool is_time(ParamKind kind);
bool is_rate(ParamKind kind);
bool unitless(ParamKind kind);
// The times a message pays on its route (link latencies, the endpoint's
// overhead): what a fit determines is their sum per kind of route.
bool is_route_time(ParamKind kind);

// SI value x display_scale = the printed unit: us for times, GB/s for
// rates, 1 for the unitless.
double display_scale(ParamKind kind);

// The parameter's physical range as printed, e.g. "0..100000 us".
std::string range_text(const FittedParam& param);

}  // namespace collkit
