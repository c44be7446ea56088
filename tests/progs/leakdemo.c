/* A small address book with two leaks: the demo program for memtrace.
 *
 *   leakdemo            builds a book of contacts from a built-in list, renames
 *                       some, removes others and prints what is left
 *
 * Leaks, on purpose:
 *   - remove_contact unlinks a contact and frees it, but not its name
 *     (strdup'd in add_contact): 3 names;
 *   - rename_contact replaces a contact's phone buffer without freeing the old
 *     one (allocated in new_phone): 2 buffers of 16 bytes.
 * Everything else is released before exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracee.h"

struct contact {
  char* name;
  char* phone;
  struct contact* next;
};

static struct contact* book;

TRACED static char* new_phone(const char* digits) {
  char* p = malloc(16);
  CHECK(p != NULL);
  snprintf(p, 16, "%s", digits);
  return p;
}

TRACED static void add_contact(const char* name, const char* digits) {
  struct contact* c = calloc(1, sizeof *c);
  CHECK(c != NULL);
  c->name = strdup(name);
  CHECK(c->name != NULL);
  c->phone = new_phone(digits);
  c->next = book;
  book = c;
}

TRACED static struct contact* find_contact(const char* name) {
  for (struct contact* c = book; c; c = c->next)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

TRACED static void rename_contact(const char* name, const char* digits) {
  struct contact* c = find_contact(name);
  CHECK(c != NULL);
  c->phone = new_phone(digits); /* leak: the old buffer is lost */
}

TRACED static void remove_contact(const char* name) {
  for (struct contact** pc = &book; *pc; pc = &(*pc)->next) {
    struct contact* c = *pc;
    if (strcmp(c->name, name) != 0) continue;
    *pc = c->next;
    free(c->phone);
    free(c); /* leak: c->name is not freed */
    return;
  }
  CHECK(!"no such contact");
}

TRACED static void free_book(void) {
  while (book) {
    struct contact* next = book->next;
    free(book->name);
    free(book->phone);
    free(book);
    book = next;
  }
}

int main(void) {
  static const char* const names[] = {"ada", "brian", "dennis", "grace", "ken", "linus", "margaret", "niklaus"};
  char digits[16];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    snprintf(digits, sizeof digits, "555-01%02zu", i);
    add_contact(names[i], digits);
  }
  rename_contact("grace", "555-0199");
  rename_contact("ken", "555-0198");
  remove_contact("brian");
  remove_contact("linus");
  remove_contact("niklaus");
  int n = 0;
  for (struct contact* c = book; c; c = c->next) {
    printf("%-10s %s\n", c->name, c->phone);
    ++n;
  }
  printf("%d contacts\n", n);
  free_book();
  return 0;
}
