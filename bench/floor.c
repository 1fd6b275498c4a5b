/* The floor: what near-duplicate search of a JSON Lines file costs on one core, done by
 * hand. Reads FILE whole, takes each line's "text" string (escapes skipped, not decoded),
 * splits it into words (runs of ASCII letters/digits/_ and non-ASCII bytes, ASCII lowered),
 * hashes every word 5-gram, keeps K = 128 one-permutation minima (empty bins take the next
 * filled one), bands 18 x 6 and sorts each band's keys to group candidates.
 * Prints "docs candidates read_s sign_s lsh_s"; with OUT, writes the distinct candidate
 * pairs (0-based line numbers "i j" per line). Build: gcc -O2 -o floor floor.c */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
enum { K = 128, BANDS = 18, ROWS = 6, N = 5 };
typedef struct { uint64_t key; uint32_t doc; } Entry;
static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL; z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int by_key(const void *a, const void *b) {
  uint64_t x = ((const Entry *)a)->key, y = ((const Entry *)b)->key; return (x > y) - (x < y);
}
static int by_pair(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b; return (x > y) - (x < y);
}
static int word_byte(unsigned char c) { return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z'); }
int main(int argc, char **argv) {
  double t0 = now();
  FILE *f = fopen(argv[1], "rb"); if (!f) { perror(argv[1]); return 1; }
  fseek(f, 0, SEEK_END); long size = ftell(f); fseek(f, 0, SEEK_SET);
  unsigned char *data = malloc(size + 1); if (fread(data, 1, size, f) != (size_t)size) return 1;
  fclose(f); data[size] = '\n';
  size_t cap = 1 << 20, n = 0; uint32_t *sig = malloc(cap * K * 4), *line_of = malloc(cap * 4);
  double t1 = now();
  uint64_t window[N]; uint32_t line = 0;
  for (unsigned char *p = data, *end = data + size; p < end; line++) {
    unsigned char *eol = memchr(p, '\n', end - p + 1), *q = memmem(p, eol - p, "\"text\"", 6);
    if (q) {
      if (n == cap) { cap *= 2; sig = realloc(sig, cap * K * 4); line_of = realloc(line_of, cap * 4); }
      uint32_t *row = sig + n * K; memset(row, 0xFF, K * 4); line_of[n++] = line;
      q = memchr(q + 6, '"', eol - q - 6) + 1;  /* the value's opening quote */
      uint64_t h = 0; int in_word = 0, words = 0;
      for (;; q++) {
        unsigned char c = *q;
        if (c == '\\') { q++; c = ' '; } else if (c == '"') c = 0;  /* an escape: a break */
        if (c && word_byte(c)) { h = (h ^ (c | (c < 0x80 ? 32 : 0))) * 0x100000001B3ULL; in_word = 1; continue; }
        if (in_word) {  /* a word ended: the 5-gram ending here */
          window[words++ % N] = mix(h); h = 0; in_word = 0;
          if (words >= N) {
            uint64_t g = 0;
            for (int k = 0; k < N; k++) g = mix(g + window[(words + k) % N]);
            uint32_t bin = g >> 57, v = (uint32_t)g;
            if (v < row[bin]) row[bin] = v;
          }
        }
        if (!c) break;
      }
      for (int k = 0, filled = -1; k < 2 * K; k++)  /* empty bins: the next filled one's */
        if (row[(K - 1 - k % K)] != 0xFFFFFFFF) filled = K - 1 - k % K;
        else if (filled >= 0 && k >= K) row[K - 1 - k % K] = row[filled];
    }
    p = eol + 1;
  }
  double t2 = now();
  Entry *entries = malloc(n * sizeof(Entry)); size_t pairs_cap = 1 << 16, npairs = 0;
  uint64_t *pairs = malloc(pairs_cap * 8);
  for (int b = 0; b < BANDS; b++) {
    for (size_t d = 0; d < n; d++) {
      uint64_t key = b; for (int r = 0; r < ROWS; r++) key = mix(key + sig[d * K + b * ROWS + r]);
      entries[d].key = key; entries[d].doc = d;
    }
    qsort(entries, n, sizeof(Entry), by_key);
    for (size_t lo = 0, hi; lo < n; lo = hi) {
      for (hi = lo + 1; hi < n && entries[hi].key == entries[lo].key; hi++) {}
      for (size_t a = lo; a < hi; a++) for (size_t c = a + 1; c < hi; c++) {
        if (npairs == pairs_cap) pairs = realloc(pairs, (pairs_cap *= 2) * 8);
        uint32_t x = entries[a].doc, y = entries[c].doc;
        pairs[npairs++] = x < y ? (uint64_t)x << 32 | y : (uint64_t)y << 32 | x;
      }
    }
  }
  qsort(pairs, npairs, 8, by_pair);
  size_t distinct = 0;
  for (size_t k = 0; k < npairs; k++) if (!k || pairs[k] != pairs[k - 1]) pairs[distinct++] = pairs[k];
  double t3 = now();
  if (argc > 2) {
    FILE *out = fopen(argv[2], "w");
    for (size_t k = 0; k < distinct; k++) fprintf(out, "%u %u\n", line_of[pairs[k] >> 32], line_of[(uint32_t)pairs[k]]);
    fclose(out);
  }
  printf("%zu %zu %.3f %.3f %.3f\n", n, distinct, t1 - t0, t2 - t1, t3 - t2);
  return 0;
}
