// Linux's epoll, which the toolchain's Glibc module does not export: used by the stream
// benchmark's load generator, which waits on tens of thousands of sockets at once.
#include <sys/epoll.h>
