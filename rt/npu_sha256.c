/* SHA-256 and HMAC-SHA256 (rt/npu_sha256.h). */
#include "rt/npu_sha256.h"

#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

static uint32_t ror(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void block(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void npu_sha256_init(npu_sha256_ctx *c)
{
    static const uint32_t h0[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    memcpy(c->h, h0, sizeof h0);
    c->bytes = 0;
    c->n = 0;
}

void npu_sha256_update(npu_sha256_ctx *c, const void *data, size_t size)
{
    const uint8_t *p = data;
    c->bytes += size;
    if (c->n) {
        size_t take = NPU_SHA256_BLOCK - c->n < size ? NPU_SHA256_BLOCK - c->n : size;
        memcpy(c->buf + c->n, p, take);
        c->n += (uint32_t)take, p += take, size -= take;
        if (c->n < NPU_SHA256_BLOCK)
            return;
        block(c->h, c->buf);
        c->n = 0;
    }
    for (; size >= NPU_SHA256_BLOCK; p += NPU_SHA256_BLOCK, size -= NPU_SHA256_BLOCK)
        block(c->h, p);
    if (size)
        memcpy(c->buf, p, size);
    c->n = (uint32_t)size;
}

void npu_sha256_final(npu_sha256_ctx *c, uint8_t out[NPU_SHA256_BYTES])
{
    uint64_t bits = c->bytes * 8u;
    c->buf[c->n++] = 0x80;
    if (c->n > NPU_SHA256_BLOCK - 8) {
        memset(c->buf + c->n, 0, NPU_SHA256_BLOCK - c->n);
        block(c->h, c->buf);
        c->n = 0;
    }
    memset(c->buf + c->n, 0, NPU_SHA256_BLOCK - 8 - c->n);
    for (int i = 0; i < 8; i++)
        c->buf[NPU_SHA256_BLOCK - 1 - i] = (uint8_t)(bits >> (8 * i));
    block(c->h, c->buf);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(c->h[i] >> (24 - 8 * j));
    memset(c, 0, sizeof *c);
}

void npu_sha256(const void *data, size_t size, uint8_t out[NPU_SHA256_BYTES])
{
    npu_sha256_ctx c;
    npu_sha256_init(&c);
    npu_sha256_update(&c, data, size);
    npu_sha256_final(&c, out);
}

void npu_hmac_sha256_init(npu_hmac_sha256_ctx *c, const void *key, size_t key_size)
{
    uint8_t k[NPU_SHA256_BLOCK] = {0}, ikey[NPU_SHA256_BLOCK];
    if (key_size > NPU_SHA256_BLOCK)
        npu_sha256(key, key_size, k); /* RFC 2104: long keys are hashed first */
    else if (key_size)
        memcpy(k, key, key_size);
    for (unsigned i = 0; i < NPU_SHA256_BLOCK; i++) {
        ikey[i] = k[i] ^ 0x36u;
        c->okey[i] = k[i] ^ 0x5cu;
    }
    npu_sha256_init(&c->inner);
    npu_sha256_update(&c->inner, ikey, sizeof ikey);
    memset(k, 0, sizeof k);
    memset(ikey, 0, sizeof ikey);
}

void npu_hmac_sha256_update(npu_hmac_sha256_ctx *c, const void *data, size_t size)
{
    npu_sha256_update(&c->inner, data, size);
}

void npu_hmac_sha256_final(npu_hmac_sha256_ctx *c, uint8_t out[NPU_SHA256_BYTES])
{
    uint8_t ih[NPU_SHA256_BYTES];
    npu_sha256_final(&c->inner, ih);
    npu_sha256_ctx o;
    npu_sha256_init(&o);
    npu_sha256_update(&o, c->okey, sizeof c->okey);
    npu_sha256_update(&o, ih, sizeof ih);
    npu_sha256_final(&o, out);
    memset(c, 0, sizeof *c);
}

void npu_hmac_sha256(const void *key, size_t key_size, const void *data, size_t size,
                     uint8_t out[NPU_SHA256_BYTES])
{
    npu_hmac_sha256_ctx c;
    npu_hmac_sha256_init(&c, key, key_size);
    npu_hmac_sha256_update(&c, data, size);
    npu_hmac_sha256_final(&c, out);
}

int npu_bytes_equal_ct(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (uint8_t)(a[i] ^ b[i]);
    return d == 0;
}
