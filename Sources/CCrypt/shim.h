#include <crypt.h>
