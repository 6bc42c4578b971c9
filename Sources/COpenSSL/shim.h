#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

/// `EVP_PKEY_EC` is a macro over another macro; Swift sees neither.
static inline int homeport_evp_pkey_ec(void) { return EVP_PKEY_EC; }
