#pragma once
// Conversion between models::Scenario and the trace schema's Scenario message (dcpsim.trace.v1), so that
// every trace states exactly which decode step it describes and a trace can be turned back into the step it
// ran.
#include "dcpsim/models/scenario.h"
#include "dcpsim/traces/schema.h"

namespace dcpsim::models {

traces::v1::Scenario to_proto(const Scenario& scenario);

// Faithful field-by-field copy; it does not call Scenario::validate(). Throws InputError naming the field
// when an enum is unspecified (the LSE base is never implied) or has a value this dcpsim does not know. The
// message's name and params have no counterpart in Scenario and are not carried over.
Scenario from_proto(const traces::v1::Scenario& message);

traces::v1::DType to_proto(DType v);
traces::v1::LseBase to_proto(LseBase v);
traces::v1::Strategy to_proto(Strategy v);
traces::v1::LaunchMode to_proto(LaunchMode v);

DType from_proto(traces::v1::DType v);
LseBase from_proto(traces::v1::LseBase v);
Strategy from_proto(traces::v1::Strategy v);
LaunchMode from_proto(traces::v1::LaunchMode v);

}  // namespace dcpsim::models
