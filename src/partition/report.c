/* The partition's --report table and its --stats-json member. */
#include "partition/partition.h"

#include <inttypes.h>
#include <string.h>

#include "common/stats.h"

static void cost_cell(FILE *out, bool ok, int64_t c)
{
    if (ok)
        fprintf(out, " %10" PRId64, c);
    else
        fprintf(out, " %10s", "-");
}

void part_report_ex(const ir_graph *g, const part_result *res, FILE *out)
{
    bool costs = res && res->costed;
    int w = 4;
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead && (int)strlen(g->nodes[i]->name) > w)
            w = (int)strlen(g->nodes[i]->name);
    if (w > 48)
        w = 48;
    int npu = 0, host = 0;
    fprintf(out, "%-*s  %-20s %-5s", w, "node", "op", "unit");
    if (costs)
        fprintf(out, " %10s %10s", "npu cyc", "host cyc");
    fprintf(out, " %s\n", "reason");
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        bool on_npu = n->unit == IR_UNIT_NPU;
        npu += on_npu;
        host += !on_npu;
        fprintf(out, "%-*.*s  %-20s %-5s", w, w, n->name, ir_op_name(n->op), on_npu ? "npu" : "host");
        const part_node_info *in = costs ? part_info_of(res, n) : NULL;
        if (costs) {
            cost_cell(out, in && in->npu_ok, in ? in->npu_cycles : 0);
            cost_cell(out, in && in->host_ok, in ? in->host_cycles : 0);
        }
        fprintf(out, " %s\n", on_npu ? "" : n->unit_reason ? n->unit_reason : "");
    }
    fprintf(out, "%d nodes on the NPU, %d on the host\n", npu, host);
    if (costs)
        fprintf(out, "partition (%s): %d switches, %" PRId64 " estimated cycles; first fit: %d switches, %" PRId64
                     " (%" PRId64 " saved)\n",
                res->mode == PART_COST ? "cost" : res->mode == PART_HOST ? "host" : "first fit", res->switches,
                res->est_cycles, res->switches_first_fit, res->est_cycles_first_fit,
                res->est_cycles_first_fit - res->est_cycles);
}

void part_report(const ir_graph *g, FILE *out)
{
    part_report_ex(g, NULL, out);
}

static void json_cost(FILE *out, const char *key, bool ok, int64_t c)
{
    if (ok)
        fprintf(out, ", \"%s\": %" PRId64, key, c);
    else
        fprintf(out, ", \"%s\": null", key);
}

void part_write_json(const ir_graph *g, const part_result *res, FILE *out)
{
    fprintf(out, "\"partition\": {\"mode\": \"%s\", \"switches\": %d, \"estimated_cycles\": %" PRId64
                 ", \"first_fit\": {\"switches\": %d, \"estimated_cycles\": %" PRId64 "},\n"
                 "    \"switch_cycles\": %" PRId64 ",\n    \"nodes\": [",
            res->mode == PART_COST ? "cost" : res->mode == PART_HOST ? "host" : "first_fit", res->switches,
            res->est_cycles, res->switches_first_fit, res->est_cycles_first_fit, res->switch_cycles);
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        const part_node_info *in = n->dead ? NULL : part_info_of(res, n);
        if (!in)
            continue;
        fprintf(out, "%s\n      {\"name\": ", k++ ? "," : "");
        npu_json_string(out, n->name);
        fprintf(out, ", \"op\": ");
        npu_json_string(out, ir_op_name(n->op));
        fprintf(out, ", \"unit\": \"%s\", \"reason\": ", n->unit == IR_UNIT_NPU ? "npu" : "host");
        npu_json_string(out, n->unit == IR_UNIT_NPU ? "" : n->unit_reason ? n->unit_reason : "");
        json_cost(out, "npu_cycles", in->npu_ok, in->npu_cycles);
        json_cost(out, "host_cycles", in->host_ok, in->host_cycles);
        fputc('}', out);
    }
    /* the estimates per host step (a host node is one), to join with npusim's measured steps by name */
    fprintf(out, "%s],\n    \"host_steps\": [", k ? "\n    " : "");
    k = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        const part_node_info *in = n->dead || n->unit != IR_UNIT_HOST ? NULL : part_info_of(res, n);
        if (!in)
            continue;
        fprintf(out, "%s\n      {\"name\": ", k++ ? "," : "");
        npu_json_string(out, n->name);
        fprintf(out, ", \"op\": ");
        npu_json_string(out, ir_op_name(n->op));
        int64_t work, aux;
        const char *kernel = part_host_kernel(n, &work, &aux);
        fprintf(out, ", \"kernel\": \"%s\", \"outputs\": %" PRId64 ", \"work\": %" PRId64 ", \"aux\": %" PRId64
                     ", \"estimated_cycles\": %" PRId64 "}",
                kernel, ir_tensor_numel(n->outputs[0]), work, aux, in->host_cycles);
    }
    fprintf(out, "%s]}", k ? "\n    " : "");
}
