#pragma once
// Analytic cost models over a HardwareProfile, all in seconds (and bytes, bytes per second). Each is a small
// function of the profile and a shape, with no state; sim/ composes them into a timeline and lets SimGrid
// carry what crosses ranks, hw/ and analysis/ share the metric formulas. One header per concern:
//   cost_launch.h       CPU issue, GPU launch latency, dependent-kernel gaps per launch mode
//   cost_kernels.h      memory-bound kernels, split-KV decode attention (per-row completion), merge kernels
//   cost_collectives.h  NCCL ring / tree / NVLS × LL / LL128 / Simple plans and the tuner, all-to-all
//   cost_signals.h      flags over NVLink for the direct strategy
//   cost_metrics.h      algbw / busbw as nccl-tests defines them
#include "dcpsim/models/cost_collectives.h"
#include "dcpsim/models/cost_collectives_price.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/cost_launch.h"
#include "dcpsim/models/cost_metrics.h"
#include "dcpsim/models/cost_signals.h"
