/* Partition: places every node on the NPU or the host, with the reason for
 * each placement, and groups the placed graph into steps (host ops and
 * NPU segments of consecutive NPU nodes) in execution order. With a cost
 * model the placement and the order minimize the estimated cycles
 * (docs/partition.md); without one, a node goes to the NPU whenever the NPU
 * can run it (first fit). */
#ifndef NPU_PARTITION_H
#define NPU_PARTITION_H

#include "ir/ir.h"

/* The host side of the cost model: the target's clocks and CPI and what a
 * switch between the units costs. Costs are in NPU cycles, the tiler's unit
 * and that of --stats-json. */
typedef struct part_host_model {
    double npu_per_host_cycle; /* npu clock / host clock */
    double cpi;                /* host cycles per instruction */
    double dram_bytes_per_cycle; /* the NPU's: the DRAM round trip of a tensor that crosses units */
} part_host_model;

typedef enum part_mode {
    PART_COST,      /* cost model (the default when costs are given) */
    PART_FIRST_FIT, /* the NPU whenever it can */
    PART_HOST,      /* the host whenever it can (for calibrating the host model) */
} part_mode;

/* What the units can run, asked per node. The tiler answers for the NPU
 * from the target (its ops, dtypes, field widths and constraints), the
 * emitter for the host runtime; tests pass their own. */
struct part_schedule;

typedef struct part_caps {
    /* true when the NPU can run n; otherwise *reason says why not (static text
     * or text in the graph's arena) */
    bool (*npu_supports)(void *ud, const ir_graph *g, const ir_node *n, const char **reason);
    void *ud;
    /* true when the host runtime can run n (NULL: it runs everything);
     * otherwise *reason says why not */
    bool (*host_supports)(void *ud, const ir_graph *g, const ir_node *n, const char **reason);
    /* NPU cycles of n alone (replaces npu_supports when set): NPU_OK when the
     * NPU can run it, NPU_EUSER with *reason as there when not; any other
     * status is a failure of the probe itself (err), which fails the compile */
    npu_status (*npu_cost)(void *ud, const ir_graph *g, const ir_node *n, int64_t *cycles, const char **reason,
                           npu_err *err);
    const part_host_model *host; /* NULL: no costs, first fit */
    /* The arena bytes of g along the schedule s, for the order search (the
     * memory planner answers: mp_order_arena, arena_ud its mp_options);
     * NULL: the order is not searched. */
    npu_status (*arena)(void *arena_ud, ir_graph *g, const struct part_schedule *s, int64_t *bytes, npu_err *err);
    void *arena_ud;
    part_mode mode;
    const char *model; /* file name for errors, or NULL */
} part_caps;

/* What the partition knew of one node. */
typedef struct part_node_info {
    const ir_node *node;
    bool npu_ok, host_ok;
    int64_t npu_cycles, host_cycles; /* estimates (NPU cycles); 0 where the unit cannot run it */
    const char *npu_reason;          /* why not the NPU, or NULL */
} part_node_info;

typedef struct part_result {
    int n_info;
    part_node_info *info; /* per live node in its original order, in the graph's arena */
    int *slot;            /* part_info_of's hash of the info by node (n_slot, a power of 2), or NULL */
    int n_slot;
    part_mode mode;
    bool costed;          /* a cost model was given */
    int switches;         /* host<->NPU transitions along the chosen order */
    int64_t est_cycles;   /* nodes plus switches, chosen assignment and order */
    int switches_first_fit;
    int64_t est_cycles_first_fit;
    int64_t switch_cycles; /* fixed part of one NPU job: doorbell, wait, completion */
    double dram_bytes_per_cycle;
} part_result;

/* n's entry in res, or NULL. */
const part_node_info *part_info_of(const part_result *res, const ir_node *n);

/* Sets unit and unit_reason of every live node; fails naming a node that
 * neither unit can run. Views (Reshape and the like, which move no data)
 * take the unit of their producer so they never split a segment. res may be
 * NULL. */
npu_status part_assign(ir_graph *g, const part_caps *caps, npu_err *err);
npu_status part_assign_ex(ir_graph *g, const part_caps *caps, part_result *res, npu_err *err);

/* Estimated cycles of the current units along the current order of g (a
 * first-fit or any other assignment): the nodes' costs plus the switches. */
int64_t part_cost_of(const ir_graph *g, const part_result *res, int *switches);

/* The host model's estimate of n in NPU cycles (the runtime's kernel for
 * its op: instructions per element, per MAC, per call; docs/partition.md). */
int64_t part_host_cycles(const part_host_model *m, const ir_node *n);
/* The model's kernel class for n and its work (elements, MACs or bytes;
 * aux: a second measure, e.g. a conv's im2col elements). */
const char *part_host_kernel(const ir_node *n, int64_t *work, int64_t *aux);
/* The host cycles of one NPU job beside the NPU's own: doorbell, polling, return. */
int64_t part_switch_cycles(const part_host_model *m);

/* Reorders the live nodes (a topological order) so that ready nodes of the
 * unit running now (host_first: of the host) go first, which keeps NPU
 * segments together. */
npu_status part_order_by_unit(ir_graph *g, bool host_first, npu_err *err);

typedef struct part_step {
    ir_unit unit;
    int first; /* index into g->nodes of the first node */
    int count; /* consecutive live nodes (an NPU segment may hold many) */
} part_step;

typedef struct part_schedule {
    int n_steps;
    part_step *steps; /* in the graph's arena */
} part_schedule;

/* Groups the topologically ordered live nodes into steps. */
npu_status part_schedule_build(ir_graph *g, part_schedule *out, npu_err *err);

/* Reorders g's live nodes into the topological order (of a few candidates:
 * least-growth list scheduling, depth-first from the outputs both ways)
 * whose arena (caps->arena) is the smallest; the current order wins ties and
 * a candidate with more steps (split NPU segments) is refused. Units must be
 * assigned. *changed says whether g->nodes changed: then rebuild the
 * schedule (part_schedule_build). Without caps->arena, nothing changes. */
npu_status part_choose_order(ir_graph *g, const part_caps *caps, bool *changed, npu_err *err);

/* The whole stage: part_assign_ex, then the order of the smallest arena
 * (part_choose_order, which never adds steps), then the schedule. */
npu_status part_plan(ir_graph *g, const part_caps *caps, part_result *res, part_schedule *sched, npu_err *err);

/* The --report table: node, op, unit, reason; with costs (res non-NULL and
 * costed) also the NPU and host estimates and the switches. */
void part_report(const ir_graph *g, FILE *out);
void part_report_ex(const ir_graph *g, const part_result *res, FILE *out);

/* The "partition" member of --stats-json: `"partition": {...}` (no comma). */
void part_write_json(const ir_graph *g, const part_result *res, FILE *out);

#endif
