// weft: a Halide-like embedded DSL with a JIT runtime. The one public header.
#pragma once
#include "weft/AutoSchedule.h"
#include "weft/Expr.h"
#include "weft/Buffer.h"
#include "weft/Func.h"
#include "weft/Pipeline.h"
#include "weft/Lazy.h"
#include "weft/Schedule.h"
#include "weft/Quantize.h"
