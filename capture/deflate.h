#pragma once

/* Private to capture/: a DEFLATE (RFC 1951) encoder made for PNG's filtered
 * rows, where the redundancy is runs (flat areas filter to runs of zeros,
 * gradients to a repeated pixel). It finds matches at distance 1 and 3 only
 * (no hash tables) and writes one dynamic-Huffman block per call, or stored
 * blocks when those are smaller: several times faster than zlib level 1.
 * Unlike libdeflate's whole-buffer API, a call can end a stream or leave it
 * open on a byte boundary, so bands compressed on separate threads
 * concatenate into one stream. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Bytes capture__deflate_band may write for n input bytes. */
size_t capture__deflate_bound(size_t n);

/** Compresses in[0, n) into out (capture__deflate_bound(n) bytes), with no
 * reference to earlier data. final: the last block of the stream (BFINAL),
 * padded to a byte; otherwise the output ends byte aligned with the stream
 * open (an empty stored block, as zlib's sync flush), so another call's
 * output may follow. tokens: scratch of 2 * n bytes (uint16_t each). Returns
 * the bytes written. */
size_t capture__deflate_band(const uint8_t* in, size_t n, bool final,
		uint16_t* tokens, uint8_t* out);
