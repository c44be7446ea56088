/* Word frequency: the demo program for the README.
 *
 *   wordfreq [FILE]     counts the words of FILE (or of a built-in text),
 *                       prints the five most frequent ones
 *
 * Its call tree is small enough to read:
 *   count_words -> next_word -> normalize
 *               -> table_add -> hash_word
 *   sort_table  -> (qsort) -> compare_entries
 *   print_top
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracee.h"

#define TABLE_SIZE 256
#define MAX_WORD 64

static const char builtin_text[] =
    "The quick brown fox jumps over the lazy dog. The dog sleeps, the fox runs;\n"
    "a fox is quick and a dog is lazy. Over and over the fox jumps the dog.\n";

struct entry {
  char word[MAX_WORD];
  int count;
};

static struct entry table[TABLE_SIZE];
static int n_entries;
static unsigned long c_next, c_norm, c_hash, c_add, c_cmp, c_count, c_sort, c_print;

TRACED unsigned hash_word(const char* w) {
  BUMP(c_hash);
  unsigned h = 2166136261u;
  for (; *w; ++w) h = (h ^ (unsigned char)*w) * 16777619u;
  return h;
}

TRACED void normalize(char* w) {
  BUMP(c_norm);
  for (; *w; ++w) *w = (char)tolower((unsigned char)*w);
}

/* Copies the next word of *p into buf; returns 0 at the end of the text. */
TRACED int next_word(const char** p, char* buf) {
  BUMP(c_next);
  const char* s = *p;
  while (*s && !isalpha((unsigned char)*s)) ++s;
  if (!*s) return 0;
  int n = 0;
  while (*s && isalpha((unsigned char)*s)) {
    if (n < MAX_WORD - 1) buf[n++] = *s;
    ++s;
  }
  buf[n] = '\0';
  *p = s;
  normalize(buf);
  return 1;
}

TRACED void table_add(const char* w) {
  BUMP(c_add);
  unsigned i = hash_word(w) % TABLE_SIZE;
  while (table[i].count && strcmp(table[i].word, w) != 0) i = (i + 1) % TABLE_SIZE;
  if (!table[i].count) {
    CHECK(n_entries < TABLE_SIZE - 1);
    strcpy(table[i].word, w);
    ++n_entries;
  }
  ++table[i].count;
}

TRACED int count_words(const char* text) {
  BUMP(c_count);
  char buf[MAX_WORD];
  int words = 0;
  while (next_word(&text, buf)) {
    table_add(buf);
    ++words;
  }
  return words;
}

TRACED int compare_entries(const void* a, const void* b) {
  BUMP(c_cmp);
  const struct entry* x = a;
  const struct entry* y = b;
  if (x->count != y->count) return y->count - x->count;
  return strcmp(x->word, y->word);
}

TRACED int sort_table(struct entry* out) {
  BUMP(c_sort);
  int n = 0;
  for (int i = 0; i < TABLE_SIZE; ++i)
    if (table[i].count) out[n++] = table[i];
  qsort(out, (size_t)n, sizeof *out, compare_entries);
  return n;
}

TRACED void print_top(const struct entry* e, int n, int top) {
  BUMP(c_print);
  for (int i = 0; i < n && i < top; ++i) printf("%4d %s\n", e[i].count, e[i].word);
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(2);
  }
  size_t cap = 4096, len = 0;
  char* buf = malloc(cap);
  CHECK(buf);
  size_t got;
  while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += got;
    if (cap - len - 1 == 0) {
      cap *= 2;
      buf = realloc(buf, cap);
      CHECK(buf);
    }
  }
  fclose(f);
  buf[len] = '\0';
  return buf;
}

int main(int argc, char** argv) {
  char* owned = argc > 1 ? read_file(argv[1]) : NULL;
  const char* text = owned ? owned : builtin_text;
  int words = count_words(text);
  static struct entry sorted[TABLE_SIZE];
  int n = sort_table(sorted);
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += sorted[i].count;
  CHECK(sum == words);
  CHECK(c_next == (unsigned long)words + 1 && c_norm == (unsigned long)words);
  CHECK(c_add == (unsigned long)words && c_hash == (unsigned long)words);
  if (!owned) CHECK(words == 32 && n == 13 && sorted[0].count == 6 && strcmp(sorted[0].word, "the") == 0);
  printf("%d words, %d distinct\n", words, n);
  print_top(sorted, n, 5);
  printf("calls count_words=%lu next_word=%lu normalize=%lu table_add=%lu hash_word=%lu "
         "sort_table=%lu compare_entries=%lu print_top=%lu\n",
         c_count, c_next, c_norm, c_add, c_hash, c_sort, c_cmp, c_print);
  free(owned);
  return 0;
}
