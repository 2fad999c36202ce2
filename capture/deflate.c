/* A DEFLATE encoder for PNG's filtered rows (see deflate.h), written from
 * RFC 1951. One call: tokenize (literals, and matches at distance 1 or 3)
 * while counting symbols, build length-limited Huffman codes, then write
 * one dynamic block, or stored blocks when that is smaller. */
#include "capture/deflate.h"

#include <stdlib.h>
#include <string.h>

#define N_LIT 286		/* literal/length symbols 0..285 */
#define N_DIST 4		/* distance symbols used: 0 (d=1) and 2 (d=3) */
#define N_CLEN 19		/* code length symbols */
#define EOB 256
#define MIN_MATCH 4		/* shorter runs cost about as much as literals */
#define MAX_MATCH 258
#define STORED_MAX 65535

/* Length symbols 257..285: first length and extra bits (RFC 1951 3.2.5). */
static const uint16_t len_base[29] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17,
	19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
static const uint8_t len_extra[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1,
	2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
/* The order code length code lengths are sent in (3.2.7). */
static const uint8_t clen_order[N_CLEN] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5,
	11, 4, 12, 3, 13, 2, 14, 1, 15 };

size_t capture__deflate_bound(size_t n)
{
	/* Never more than stored blocks (5 bytes each) plus a sync flush. */
	return n + 5 * (n / STORED_MAX + 1) + 16;
}

/* Length -> its symbol's index in len_base. */
static int len_index(int len)
{
	int i = 0;
	while (i < 28 && len_base[i + 1] <= len)
		i++;
	return i;
}

/* LSB-first bit writer (3.1.1): values go in from bit 0 of each byte. */
struct bits {
	uint8_t* p;
	uint64_t acc;
	int n;
};

static inline void put(struct bits* b, uint32_t v, int len)
{
	b->acc |= (uint64_t)v << b->n;
	b->n += len;
	if (b->n >= 32) {
		b->p[0] = (uint8_t)b->acc;
		b->p[1] = (uint8_t)(b->acc >> 8);
		b->p[2] = (uint8_t)(b->acc >> 16);
		b->p[3] = (uint8_t)(b->acc >> 24);
		b->p += 4;
		b->acc >>= 32;
		b->n -= 32;
	}
}

/* Pad to a byte boundary with zero bits and write out what is pending. */
static void align(struct bits* b)
{
	while (b->n > 0) {
		*b->p++ = (uint8_t)b->acc;
		b->acc >>= 8;
		b->n -= 8;
	}
	b->acc = 0;
	b->n = 0;
}

/* How many bytes at a equal those at b (b may overlap a: a run). */
static inline size_t match_len(const uint8_t* a, const uint8_t* b, size_t max)
{
	size_t l = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (l + 8 <= max) {
		uint64_t x, y;
		memcpy(&x, a + l, 8);
		memcpy(&y, b + l, 8);
		if (x != y)
			return l + (size_t)(__builtin_ctzll(x ^ y) / 8);
		l += 8;
	}
#endif
	while (l < max && a[l] == b[l])
		l++;
	return l;
}

/* Tokens: a literal byte (< 256), or 256 + length - 3, plus 256 when the
 * distance is 3. Counts the symbols as it goes; returns the token count. */
static size_t tokenize(const uint8_t* p, size_t n, uint16_t* tok,
		const uint8_t* len_sym, uint32_t* lit, uint32_t* dist)
{
	size_t i = 0, t = 0;
	while (i < n) {
		size_t max = n - i < MAX_MATCH ? n - i : MAX_MATCH;
		size_t l1 = 0, l3 = 0;
		if (i >= 1 && p[i] == p[i - 1])
			l1 = match_len(p + i, p + i - 1, max);
		if (i >= 3 && l1 < max && p[i] == p[i - 3])	/* else it cannot be longer */
			l3 = match_len(p + i, p + i - 3, max);
		if (l1 < MIN_MATCH && l3 < MIN_MATCH) {
			tok[t++] = p[i];
			lit[p[i]]++;
			i++;
			continue;
		}
		bool d3 = l3 > l1;
		size_t l = d3 ? l3 : l1;
		tok[t++] = (uint16_t)(256 + (l - 3) + (d3 ? 256 : 0));
		lit[257 + len_sym[l]]++;
		dist[d3 ? 2 : 0]++;
		i += l;
	}
	return t;
}

/* Huffman code lengths for freq[0, n), none over limit bits. Every used
 * symbol gets a code, and at least two symbols do, so the code is complete
 * (decoders refuse incomplete ones). Over the limit, the counts are halved
 * and the tree built again: the lengths flatten until they fit. */
struct leaf {
	uint64_t w;
	int sym;
};

static int leaf_cmp(const void* a, const void* b)
{
	const struct leaf* x = a;
	const struct leaf* y = b;
	if (x->w != y->w)
		return x->w < y->w ? -1 : 1;
	return x->sym - y->sym;
}

static void huff_lengths(const uint32_t* freq, int n, int limit, uint8_t* len)
{
	uint64_t f[N_LIT];
	int used = 0;
	for (int s = 0; s < n; s++) {
		f[s] = freq[s];
		used += freq[s] != 0;
	}
	for (int s = 0; s < n && used < 2; s++)
		if (!f[s]) {
			f[s] = 1;
			used++;
		}
	struct leaf nodes[2 * N_LIT];
	int parent[2 * N_LIT], depth[2 * N_LIT];
	for (;;) {
		int m = 0;
		for (int s = 0; s < n; s++)
			if (f[s])
				nodes[m++] = (struct leaf){ f[s], s };
		qsort(nodes, (size_t)m, sizeof(nodes[0]), leaf_cmp);
		/* Two queues: the sorted leaves, and the joined nodes (made in
		 * order of weight); always join the two lightest. */
		int li = 0, qi = m, next = m;
		for (int k = 0; k < m - 1; k++) {
			int pick[2];
			for (int j = 0; j < 2; j++)
				pick[j] = li < m && (qi >= next || nodes[li].w <= nodes[qi].w) ? li++ : qi++;
			nodes[next] = (struct leaf){ nodes[pick[0]].w + nodes[pick[1]].w, -1 };
			parent[pick[0]] = parent[pick[1]] = next++;
		}
		depth[next - 1] = 0;
		int max = 0;
		for (int k = next - 2; k >= 0; k--) {
			depth[k] = depth[parent[k]] + 1;
			if (k < m && depth[k] > max)
				max = depth[k];
		}
		if (max <= limit) {
			memset(len, 0, (size_t)n);
			for (int k = 0; k < m; k++)
				len[nodes[k].sym] = (uint8_t)depth[k];
			return;
		}
		for (int s = 0; s < n; s++)
			if (f[s])
				f[s] = (f[s] + 1) / 2;
	}
}

/* Canonical codes from lengths (3.2.2), bit-reversed: Huffman codes are
 * sent from their most significant bit, the writer starts at bit 0. */
static void huff_codes(const uint8_t* len, int n, uint16_t* code)
{
	int count[16] = { 0 };
	for (int s = 0; s < n; s++)
		count[len[s]]++;
	count[0] = 0;
	int next[16];
	int c = 0;
	for (int b = 1; b < 16; b++) {
		c = (c + count[b - 1]) << 1;
		next[b] = c;
	}
	for (int s = 0; s < n; s++) {
		if (!len[s])
			continue;
		int v = next[len[s]]++, r = 0;
		for (int b = 0; b < len[s]; b++)
			r |= ((v >> b) & 1) << (len[s] - 1 - b);
		code[s] = (uint16_t)r;
	}
}

/* The code lengths of both alphabets as code length symbols (3.2.7):
 * 0..15 a length, 16 repeats the last 3..6 times, 17 and 18 are runs of
 * 3..10 and 11..138 zeros. sym gets symbol | extra value << 8. */
static int clen_symbols(const uint8_t* lens, int n, uint16_t* sym, uint32_t* freq)
{
	int k = 0;
	for (int i = 0; i < n;) {
		int v = lens[i], r = 1;
		while (i + r < n && lens[i + r] == v)
			r++;
		i += r;
		while (v == 0 && r >= 3) {
			int take = r > 138 ? 138 : r;
			sym[k++] = take >= 11 ? (uint16_t)(18 | (take - 11) << 8)
					: (uint16_t)(17 | (take - 3) << 8);
			freq[take >= 11 ? 18 : 17]++;
			r -= take;
		}
		if (v != 0) {
			sym[k++] = (uint16_t)v;
			freq[v]++;
			r--;
			while (r >= 3) {
				int take = r > 6 ? 6 : r;
				sym[k++] = (uint16_t)(16 | (take - 3) << 8);
				freq[16]++;
				r -= take;
			}
		}
		for (; r > 0; r--) {
			sym[k++] = (uint16_t)v;
			freq[v]++;
		}
	}
	return k;
}

static const uint8_t clen_extra[N_CLEN] = { [16] = 2, [17] = 3, [18] = 7 };

/* Everything one dynamic block needs. */
struct block {
	uint8_t lit_len[N_LIT], dist_len[N_DIST], clen_len[N_CLEN];
	uint16_t lit_code[N_LIT], dist_code[N_DIST], clen_code[N_CLEN];
	uint16_t csym[N_LIT + N_DIST];
	int n_csym, n_lit, n_clen;
	uint32_t len_bits[MAX_MATCH + 1];	/* a length's code and extra bits */
	uint8_t len_nbits[MAX_MATCH + 1];
	uint64_t bits;				/* size of the block */
};

static void block_plan(struct block* k, const uint32_t* lit, const uint32_t* dist)
{
	huff_lengths(lit, N_LIT, 15, k->lit_len);
	huff_lengths(dist, N_DIST, 15, k->dist_len);
	huff_codes(k->lit_len, N_LIT, k->lit_code);
	huff_codes(k->dist_len, N_DIST, k->dist_code);
	k->n_lit = N_LIT;
	while (k->n_lit > 257 && !k->lit_len[k->n_lit - 1])
		k->n_lit--;
	uint8_t lens[N_LIT + N_DIST];
	memcpy(lens, k->lit_len, (size_t)k->n_lit);
	memcpy(lens + k->n_lit, k->dist_len, N_DIST);
	uint32_t cfreq[N_CLEN] = { 0 };
	k->n_csym = clen_symbols(lens, k->n_lit + N_DIST, k->csym, cfreq);
	huff_lengths(cfreq, N_CLEN, 7, k->clen_len);
	huff_codes(k->clen_len, N_CLEN, k->clen_code);
	k->n_clen = N_CLEN;
	while (k->n_clen > 4 && !k->clen_len[clen_order[k->n_clen - 1]])
		k->n_clen--;

	uint64_t bits = 3 + 5 + 5 + 4 + 3 * (uint64_t)k->n_clen;
	for (int s = 0; s < N_CLEN; s++)
		bits += (uint64_t)cfreq[s] * (k->clen_len[s] + clen_extra[s]);
	for (int s = 0; s < N_LIT; s++)
		bits += (uint64_t)lit[s] * (k->lit_len[s] + (s > 256 ? len_extra[s - 257] : 0));
	for (int s = 0; s < N_DIST; s++)
		bits += (uint64_t)dist[s] * k->dist_len[s];
	k->bits = bits;
	for (int l = 3; l <= MAX_MATCH; l++) {
		int i = len_index(l);
		k->len_bits[l] = k->lit_code[257 + i] | (uint32_t)(l - len_base[i]) << k->lit_len[257 + i];
		k->len_nbits[l] = (uint8_t)(k->lit_len[257 + i] + len_extra[i]);
	}
}

static void block_write(struct bits* b, const struct block* k, bool final,
		const uint16_t* tok, size_t n_tok)
{
	put(b, final, 1);
	put(b, 2, 2);		/* dynamic Huffman */
	put(b, (uint32_t)(k->n_lit - 257), 5);
	put(b, N_DIST - 1, 5);
	put(b, (uint32_t)(k->n_clen - 4), 4);
	for (int i = 0; i < k->n_clen; i++)
		put(b, k->clen_len[clen_order[i]], 3);
	for (int i = 0; i < k->n_csym; i++) {
		int s = k->csym[i] & 0xff;
		put(b, k->clen_code[s], k->clen_len[s]);
		if (clen_extra[s])
			put(b, (uint32_t)(k->csym[i] >> 8), clen_extra[s]);
	}
	for (size_t i = 0; i < n_tok; i++) {
		unsigned t = tok[i];
		if (t < 256) {
			put(b, k->lit_code[t], k->lit_len[t]);
		} else {
			unsigned l = (t & 255) + 3, d = t >= 512 ? 2 : 0;
			put(b, k->len_bits[l], k->len_nbits[l]);
			put(b, k->dist_code[d], k->dist_len[d]);
		}
	}
	put(b, k->lit_code[EOB], k->lit_len[EOB]);
}

/* Stored blocks (3.2.4): the bytes as they are. Byte aligned at the end. */
static void stored_write(struct bits* b, const uint8_t* in, size_t n, bool final)
{
	size_t i = 0;
	do {
		size_t len = n - i < STORED_MAX ? n - i : STORED_MAX;
		put(b, final && i + len == n, 1);
		put(b, 0, 2);
		align(b);
		b->p[0] = (uint8_t)len;
		b->p[1] = (uint8_t)(len >> 8);
		b->p[2] = (uint8_t)~len;
		b->p[3] = (uint8_t)(~len >> 8);
		if (len)
			memcpy(b->p + 4, in + i, len);
		b->p += 4 + len;
		i += len;
	} while (i < n);
}

size_t capture__deflate_band(const uint8_t* in, size_t n, bool final,
		uint16_t* tokens, uint8_t* out)
{
	struct bits b = { out, 0, 0 };
	uint8_t len_sym[MAX_MATCH + 1];
	for (int l = 3; l <= MAX_MATCH; l++)
		len_sym[l] = (uint8_t)len_index(l);
	uint32_t lit[N_LIT] = { 0 }, dist[N_DIST] = { 0 };
	size_t n_tok = tokenize(in, n, tokens, len_sym, lit, dist);
	lit[EOB] = 1;
	/* Distances 1 and 3 always get codes, so the distance code is complete. */
	dist[0] += !dist[0];
	dist[2] += !dist[2];
	struct block k;
	block_plan(&k, lit, dist);
	size_t stored = n + 5 * (n / STORED_MAX + 1);
	if (n == 0 || (k.bits + 7) / 8 >= stored) {
		if (n || final)
			stored_write(&b, in, n, final);
		return (size_t)(b.p - out);
	}
	block_write(&b, &k, final, tokens, n_tok);
	if (!final) {
		/* An empty stored block: the stream stays open, byte aligned. */
		put(&b, 0, 3);
		align(&b);
		memcpy(b.p, "\x00\x00\xff\xff", 4);
		b.p += 4;
	} else {
		align(&b);
	}
	return (size_t)(b.p - out);
}
