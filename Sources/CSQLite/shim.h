#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a macro Swift cannot import: SQLite copies the bound value.
static inline sqlite3_destructor_type homeport_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}
