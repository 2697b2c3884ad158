/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104): one implementation for
 * the compiler (npucc --sign-key), the host tools (--verify-key) and the
 * on-device runtime (npurt_verify_mac). Freestanding C: no allocation, no
 * libc beyond memcpy/memset. Not hardened against timing side channels
 * beyond a constant-time tag comparison. */
#ifndef NPU_SHA256_H
#define NPU_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define NPU_SHA256_BYTES 32u
#define NPU_SHA256_BLOCK 64u

typedef struct npu_sha256_ctx {
    uint32_t h[8];
    uint64_t bytes;       /* message length so far */
    uint8_t buf[NPU_SHA256_BLOCK];
    uint32_t n;           /* bytes waiting in buf */
} npu_sha256_ctx;

void npu_sha256_init(npu_sha256_ctx *c);
void npu_sha256_update(npu_sha256_ctx *c, const void *data, size_t size);
void npu_sha256_final(npu_sha256_ctx *c, uint8_t out[NPU_SHA256_BYTES]);
void npu_sha256(const void *data, size_t size, uint8_t out[NPU_SHA256_BYTES]);

/* HMAC in three calls, for messages fed in pieces. */
typedef struct npu_hmac_sha256_ctx {
    npu_sha256_ctx inner;
    uint8_t okey[NPU_SHA256_BLOCK]; /* key ^ opad */
} npu_hmac_sha256_ctx;

void npu_hmac_sha256_init(npu_hmac_sha256_ctx *c, const void *key, size_t key_size);
void npu_hmac_sha256_update(npu_hmac_sha256_ctx *c, const void *data, size_t size);
void npu_hmac_sha256_final(npu_hmac_sha256_ctx *c, uint8_t out[NPU_SHA256_BYTES]);
void npu_hmac_sha256(const void *key, size_t key_size, const void *data, size_t size,
                     uint8_t out[NPU_SHA256_BYTES]);

/* 1 when the n bytes of a and b are equal; time independent of where they differ. */
int npu_bytes_equal_ct(const uint8_t *a, const uint8_t *b, size_t n);

#endif
