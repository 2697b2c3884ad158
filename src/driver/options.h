/* npucc command line (the contract in docs/cli.md). Parsing is separate from
 * main so that tests can drive it and so it never exits. */
#ifndef NPU_DRIVER_OPTIONS_H
#define NPU_DRIVER_OPTIONS_H

#include "calib/dataset.h"
#include "common/status.h"
#include "import/import.h"
#include "quantize/io_types.h"
#include "quantize/quantize.h"

typedef enum drv_emit { DRV_EMIT_NPUB, DRV_EMIT_C, DRV_EMIT_QDQ, DRV_EMIT_LISTING } drv_emit;
typedef enum drv_calib_method {
    DRV_CALIB_MINMAX,
    DRV_CALIB_PERCENTILE,
    DRV_CALIB_KL,
    DRV_CALIB_MSE
} drv_calib_method;

enum { DRV_MAX_INPUT_SHAPES = 16, DRV_MAX_LAYER_BITS = 64, DRV_MAX_SETS = 64 };

typedef struct drv_layer_bits {
    char name[256];
    int bits;  /* weights: 8, 4, or 0 (--wbits) */
    int abits; /* activations: 8, 16, or 0 (--abits) */
} drv_layer_bits;

typedef struct drv_options {
    const char *target;      /* NAME or FILE.yaml */
    int nsets;               /* --set PATH=VALUE: target overrides, in order */
    const char *sets[DRV_MAX_SETS];
    const char *calib_dir;
    const char *output;      /* -o; NULL: derived from the model name */
    drv_emit emit;
    const char *c_section;   /* --section: the --emit c array's section; NULL: .rodata */
    unsigned c_align;        /* --align: the --emit c array's alignment; 0: 16 */
    int wbits, abits;        /* 8 or 4; abits also 16 (A16W8) */
    int w4_min_fanin;        /* --w4-min-fanin: under --wbits 4, layers of a smaller fan-in keep 8 bits */
    drv_calib_method calib_method;
    float percentile;        /* --percentile, for the percentile method */
    bool report;
    const char *stats_json;
    const char *sign_key;    /* --sign-key FILE: HMAC-SHA256 tags in the binary */
    bool dump_ir;            /* after import */
    const char *dump_after;  /* a pass name, or "all" */
    bool validate;           /* --validate: load the target and print a summary */
    bool strip;              /* leave the debug and graph sections out */
    bool verbose;
    double accuracy_budget_db; /* --accuracy-budget; 0: none */
    bool precision_auto;       /* --precision auto */
    int64_t budget_cycles;     /* --budget-cycles; 0: none */
    double budget_ratio;       /* --budget-ratio; 0: none */
    double target_sqnr_db;     /* --target-sqnr; 0: none */
    cal_read_opts calib_read;  /* --mean, --std, --layout, --resize */
    int bias_correction;       /* --bias-correction 1, --no-bias-correction 0 (the default) */
    bool cle;                  /* --cle */
    q_rounding int4_rounding;  /* --int4-rounding or --weight-rounding (default gptq) */
    q_rounding int8_rounding;  /* --weight-rounding (default nearest) */
    int n_input_shapes;
    imp_input_shape input_shapes[DRV_MAX_INPUT_SHAPES];
    int n_layer_bits;
    drv_layer_bits layer_bits[DRV_MAX_LAYER_BITS];
    q_io_type input_type, output_type; /* --input-type, --output-type (Q_IO_KEEP: not given) */
    int partition;             /* --partition: part_mode (cost, first-fit, host) */
    const char *model;
    bool help;
    int64_t max_nodes;         /* --max-nodes; 0: IMP_MAX_NODES_DEFAULT */
} drv_options;

/* Fills opts from argv. A usage error returns NPU_EUSAGE with the message. */
npu_status drv_parse_args(int argc, char **argv, drv_options *opts, npu_err *err);
void drv_print_usage(FILE *out);

#endif
