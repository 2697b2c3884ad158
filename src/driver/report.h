/* npucc's --report tables and --stats-json (static estimates). */
#ifndef NPU_DRIVER_REPORT_H
#define NPU_DRIVER_REPORT_H

#include <stdio.h>

#include "driver/options.h"
#include "emit/emit.h"

npu_status drv_report(const drv_options *o, const tgt_target *t, const ir_graph *g, const part_result *part,
                      const part_schedule *sched, const mp_plan *plan,
                      const tile_program *prog, const emit_info *info, FILE *out, npu_err *err);

#endif
