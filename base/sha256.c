#include "base/sha256.h"

#include <string.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const uint8_t block[SHA256_BLOCK])
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16
				| (uint32_t)block[4 * i + 2] << 8 | block[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d;
	h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

void sha256_init(struct sha256* self)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	memcpy(self->h, iv, sizeof(iv));
	self->bytes = 0;
	self->n = 0;
}

void sha256_update(struct sha256* self, const void* data, size_t len)
{
	const uint8_t* p = data;
	self->bytes += len;
	if (self->n) {
		size_t take = SHA256_BLOCK - self->n < len ? SHA256_BLOCK - self->n : len;
		memcpy(self->buf + self->n, p, take);
		self->n += take;
		p += take;
		len -= take;
		if (self->n < SHA256_BLOCK)
			return;
		compress(self->h, self->buf);
		self->n = 0;
	}
	for (; len >= SHA256_BLOCK; p += SHA256_BLOCK, len -= SHA256_BLOCK)
		compress(self->h, p);
	memcpy(self->buf, p, len);
	self->n = len;
}

void sha256_final(struct sha256* self, uint8_t out[SHA256_SIZE])
{
	uint64_t bits = self->bytes * 8;
	self->buf[self->n++] = 0x80;
	if (self->n > SHA256_BLOCK - 8) {
		memset(self->buf + self->n, 0, SHA256_BLOCK - self->n);
		compress(self->h, self->buf);
		self->n = 0;
	}
	memset(self->buf + self->n, 0, SHA256_BLOCK - 8 - self->n);
	for (int i = 0; i < 8; i++)
		self->buf[SHA256_BLOCK - 1 - i] = (uint8_t)(bits >> (8 * i));
	compress(self->h, self->buf);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(self->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(self->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(self->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)self->h[i];
	}
	memset(self, 0, sizeof(*self));
}

void sha256(const void* data, size_t len, uint8_t out[SHA256_SIZE])
{
	struct sha256 s;
	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, out);
}

void hmac_sha256(const void* key, size_t key_len, const void* data, size_t len,
		uint8_t out[SHA256_SIZE])
{
	uint8_t k[SHA256_BLOCK] = { 0 };
	if (key_len > SHA256_BLOCK)
		sha256(key, key_len, k);
	else if (key_len)
		memcpy(k, key, key_len);
	uint8_t pad[SHA256_BLOCK];
	uint8_t inner[SHA256_SIZE];
	struct sha256 s;
	for (int i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&s);
	sha256_update(&s, pad, sizeof(pad));
	sha256_update(&s, data, len);
	sha256_final(&s, inner);
	for (int i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&s);
	sha256_update(&s, pad, sizeof(pad));
	sha256_update(&s, inner, sizeof(inner));
	sha256_final(&s, out);
	memset(k, 0, sizeof(k));
	memset(pad, 0, sizeof(pad));
}

bool sha256_equal(const void* a, const void* b, size_t n)
{
	const volatile uint8_t* x = a;
	const volatile uint8_t* y = b;
	uint8_t d = 0;
	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}
