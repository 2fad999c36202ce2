#pragma once

/* SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for integrity tags on
 * state that passes through a client (MCP requestState). Written here so the
 * build needs no crypto library; tests/unit/test_base.c checks the FIPS and
 * RFC 4231 vectors. Not for passwords, not constant-time in its inputs'
 * lengths (only sha256_equal is). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_SIZE 32
#define SHA256_BLOCK 64

struct sha256 {
	uint32_t h[8];
	uint64_t bytes;
	uint8_t buf[SHA256_BLOCK];
	size_t n;
};

void sha256_init(struct sha256* self);
void sha256_update(struct sha256* self, const void* data, size_t len);
void sha256_final(struct sha256* self, uint8_t out[SHA256_SIZE]);
/** One shot. */
void sha256(const void* data, size_t len, uint8_t out[SHA256_SIZE]);
/** HMAC-SHA-256 of data under key (any length). */
void hmac_sha256(const void* key, size_t key_len, const void* data, size_t len,
		uint8_t out[SHA256_SIZE]);
/** Compare n bytes in time independent of where they differ. */
bool sha256_equal(const void* a, const void* b, size_t n);
