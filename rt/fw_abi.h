/* The contract between the firmware (rt/, built for rv32imafc) and the
 * simulator (sim/, native): MMIO register offsets of the sim-control page and
 * of the NPU register block, and the request block the simulator places in
 * DRAM for the firmware. Both sides include this one header so the numbers
 * cannot drift apart; docs/simulator.md describes the meaning of each.
 * Plain integers and uint32_t fields only: the layout is identical on the
 * 64-bit build machine and on the 32-bit guest. */
#ifndef FW_ABI_H
#define FW_ABI_H

#include <stdint.h>

/* ---- sim-control page (all registers 32-bit, 4-byte accesses) ---------- */
#define FW_CTL_MAGIC 0x000u     /* RO  FW_CTL_MAGIC_VALUE */
#define FW_CTL_VERSION 0x004u   /* RO  FW_CTL_VERSION_VALUE */
#define FW_CTL_PUTC 0x008u      /* WO  low byte goes to the console */
#define FW_CTL_EXIT 0x00Cu      /* WO  exit code (int32); ends the run */
#define FW_CTL_CYCLES_LO 0x010u /* RO  host cycles so far; reading LO latches HI */
#define FW_CTL_CYCLES_HI 0x014u /* RO */
#define FW_CTL_INSNS_LO 0x018u  /* RO  host instructions so far; reading LO latches HI */
#define FW_CTL_INSNS_HI 0x01Cu  /* RO */
#define FW_CTL_REQ_ADDR 0x020u  /* RO  guest address of the fw_request block, 0: none */
#define FW_CTL_SERVE 0x024u     /* RO  1: after answering a request, wait (FW_CTL_WAIT) for the next instead of exiting */
#define FW_CTL_WAIT 0x028u      /* WO  the request is answered: the run pauses until the host places the next one */

#define FW_CTL_MAGIC_VALUE 0x5355504Eu /* "NPUS" little-endian */
#define FW_CTL_VERSION_VALUE 2u /* 2: FW_CTL_SERVE and FW_CTL_WAIT */

/* ---- NPU register block ------------------------------------------------- */
#define FW_NPU_ID 0x000u          /* RO  FW_NPU_ID_VALUE */
#define FW_NPU_VERSION 0x004u     /* RO  register-block version */
#define FW_NPU_CMD_BASE 0x010u    /* RW  guest address of the command stream */
#define FW_NPU_CMD_LEN 0x014u     /* RW  command stream length in bytes */
#define FW_NPU_REGION_BASE(i) (0x040u + 8u * (uint32_t)(i)) /* RW */
#define FW_NPU_REGION_SIZE(i) (0x044u + 8u * (uint32_t)(i)) /* RW */
#define FW_NPU_DOORBELL 0x080u    /* WO  any value starts a job (the value is passed on) */
#define FW_NPU_STATUS 0x084u      /* RO  FW_NPU_ST_*; a read waits for the running job */
#define FW_NPU_CYCLES_LO 0x090u   /* RO  NPU cycles of the last job (waits); latches HI */
#define FW_NPU_CYCLES_HI 0x094u   /* RO */
#define FW_NPU_TOTAL_LO 0x098u    /* RO  NPU cycles of all finished jobs (waits); latches HI */
#define FW_NPU_TOTAL_HI 0x09Cu    /* RO */
#define FW_NPU_JOBS 0x0A0u        /* RO  number of jobs started */

#define FW_NPU_ID_VALUE 0x3155504Eu /* "NPU1" little-endian */
#define FW_NPU_VERSION_VALUE 1u

#define FW_NPU_ST_BUSY 0x1u /* never seen by a read: a read waits instead */
#define FW_NPU_ST_DONE 0x2u /* at least one job has finished since reset */

/* DRAM regions the NPU addresses as region + offset (relocatable binaries). */
enum fw_npu_region {
    FW_NPU_REGION_CONST = 0,  /* weights and constants */
    FW_NPU_REGION_ARENA = 1,  /* activations */
    FW_NPU_REGION_INPUT = 2,  /* model inputs */
    FW_NPU_REGION_OUTPUT = 3, /* model outputs */
    FW_NPU_REGION_FLASH = 4,  /* the constants section's bytes in flash: offset X reads what region 0's X holds */
    FW_NPU_NREGIONS = 8,      /* 5..7 reserved */
};

/* ---- request block ----------------------------------------------------- */
#define FW_REQ_MAGIC 0x5145524Eu /* "NREQ" little-endian */
#define FW_REQ_VERSION 2u /* 2: flash_blob, for region 4 when the firmware runs a DRAM copy of the blob */

enum fw_cmd {
    FW_CMD_SELFCHECK = 1, /* arg0 iterations (0: 1000), arg1 seed; result0 int hash, result1 float bits */
    FW_CMD_LOOP = 2,      /* arg0 iterations of a 2-instruction loop; result0/1 cycles before/after */
    FW_CMD_LOAD = 3,      /* load 32 bits from arg0; result0 = pc of the load (stored before it), result1 = value */
    FW_CMD_STORE = 4,     /* store arg1 to arg0; result0 = pc of the store (stored before it) */
    FW_CMD_HANG = 5,      /* spin forever (tests the instruction limit) */
    FW_CMD_NPU_KICK = 6,  /* arg0 cmd base, arg1 cmd len, arg2 region table (fw_npu_region_desc[8]) or 0,
                           * arg3 doorbell value, arg4 1: wait with wfi instead of a status read,
                           * arg5/arg6 address and bytes the host increments word by word between
                           * the doorbell and the wait (host work overlapping the job);
                           * result0 cycles before doorbell, result1 cycles after wait, result2 status,
                           * result3 last job NPU cycles (low 32), result4 jobs */
    FW_CMD_ILLEGAL = 7,   /* execute an illegal instruction; result0 = its pc */
    FW_CMD_EXIT = 8,      /* print arg0 bytes of text at arg1 (if any), exit with code arg2 */
    FW_CMD_WFI = 9,       /* wfi with no NPU job running (the simulator must call that a deadlock) */
    FW_CMD_RUN_NPUB = 16, /* run a .npub with libnpurt: see FW_NPUB_ARG_* and FW_NPUB_RES_* */
};

/* FW_CMD_RUN_NPUB (docs/runtime.md). The blob lies in flash, or in DRAM as
 * a copy of its flash image (fw_request.flash_blob), 8-byte aligned; inputs
 * are in place before the run, outputs are there after. The input and output
 * regions hold npub_memory.region_bytes of theirs. */
enum fw_npub_arg {
    FW_NPUB_ARG_BLOB = 0,         /* guest address of the .npub */
    FW_NPUB_ARG_BLOB_SIZE = 1,    /* its size in bytes */
    FW_NPUB_ARG_INPUT = 2,        /* input region base */
    FW_NPUB_ARG_OUTPUT = 3,       /* output region base */
    FW_NPUB_ARG_ARENA = 4,        /* arena region base */
    FW_NPUB_ARG_ARENA_SIZE = 5,   /* its size (>= npub_memory.region_bytes[arena]) */
    FW_NPUB_ARG_SCRATCH = 6,      /* host-kernel scratch base (4-byte aligned, 16 recommended) */
    FW_NPUB_ARG_SCRATCH_SIZE = 7, /* >= scratch_bytes; 8 * steps more for the step-cycle table */
};

enum fw_npub_result {
    FW_NPUB_RES_STATUS = 0,      /* 0, or the exit code (FW_EXIT_NPUB_*) */
    FW_NPUB_RES_STEP = 1,        /* index of the failing step, 0xffffffff when none or not a step */
    FW_NPUB_RES_CYCLES_LO = 2,   /* host cycles of npurt_run (NPU waits included) */
    FW_NPUB_RES_CYCLES_HI = 3,
    FW_NPUB_RES_JOBS = 4,        /* NPU jobs started by the run */
    FW_NPUB_RES_OFFSET = 5,      /* npurt_open's error: file offset of what is wrong */
    FW_NPUB_RES_STEP_TABLE = 6,  /* address of uint32 {cycles lo, hi}[steps] per step, or 0 */
    FW_NPUB_RES_STEPS = 7,       /* step count of the binary */
};

/* Firmware exit codes (the value written to FW_CTL_EXIT). */
enum fw_exit {
    FW_EXIT_OK = 0,
    FW_EXIT_CHECK_FAILED = 1, /* the self-check computed a wrong value */
    FW_EXIT_BAD_REQUEST = 2,  /* bad magic/version in the request block */
    FW_EXIT_BAD_COMMAND = 3,  /* unknown command */
    FW_EXIT_NO_SIM = 4,       /* the sim-control page does not answer with its magic */
    FW_EXIT_ABORT = 5,        /* abort()/assert in the firmware */
    FW_EXIT_NPUB_BAD = 6,     /* FW_CMD_RUN_NPUB: npurt_open rejected the binary */
    FW_EXIT_NPUB_ENV = 7,     /* FW_CMD_RUN_NPUB: regions or scratch smaller than the binary needs */
    FW_EXIT_NPUB_STEP = 8,    /* FW_CMD_RUN_NPUB: a step failed (host kernel, or NPU status) */
};

/* Request status written back by the firmware. */
enum fw_req_status { FW_REQ_ST_NEW = 0, FW_REQ_ST_RUNNING = 1, FW_REQ_ST_DONE = 2, FW_REQ_ST_FAILED = 3 };

typedef struct fw_request {
    uint32_t magic;   /* FW_REQ_MAGIC */
    uint32_t version; /* FW_REQ_VERSION */
    uint32_t command; /* enum fw_cmd */
    uint32_t status;  /* enum fw_req_status, written by the firmware */
    uint32_t arg[8];
    uint32_t result[8];
    uint32_t flash_blob; /* FW_CMD_RUN_NPUB: guest address of the blob's image in flash when
                          * arg[FW_NPUB_ARG_BLOB] is a copy of it (placement.constants dram), else 0 */
} fw_request;

typedef struct fw_npu_region_desc {
    uint32_t base, size;
} fw_npu_region_desc;

_Static_assert(sizeof(fw_request) == 84, "fw_request layout is shared by host and guest");
_Static_assert(sizeof(fw_npu_region_desc) == 8, "fw_npu_region_desc layout is shared");

#endif
