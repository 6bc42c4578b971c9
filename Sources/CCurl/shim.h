#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one fixed-type
// wrapper per kind of argument.

static inline CURLcode homeport_curl_set_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}

static inline CURLcode homeport_curl_set_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}

static inline CURLcode homeport_curl_set_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}

static inline CURLcode homeport_curl_set_slist(CURL *curl, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(curl, option, value);
}

static inline CURLcode homeport_curl_set_write_function(CURL *curl, curl_write_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode homeport_curl_set_header_function(CURL *curl, curl_write_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, callback);
}

static inline CURLcode homeport_curl_set_progress_function(CURL *curl, curl_xferinfo_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, callback);
}

static inline long homeport_curl_status(CURL *curl) {
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

static inline CURLcode homeport_curl_set_read_function(CURL *curl, curl_read_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_READFUNCTION, callback);
}

// The multi interface: many transfers at once on one thread, HTTP/2 streams multiplexed on one
// connection per host where the server offers HTTP/2 (ALPN), kept-alive HTTP/1.1 connections
// otherwise.

static inline CURLMcode homeport_curl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

/// A transfer that has ended, with its result; NULL when none has (since the last call).
static inline CURL *homeport_curl_multi_done(CURLM *multi, CURLcode *result) {
    int left = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(multi, &left)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *result = message->data.result;
            return message->easy_handle;
        }
    }
    return NULL;
}

// Connections to public addresses only: whatever a name resolves to, libcurl opens no socket to
// this machine, a private, shared, link-local, benchmarking, multicast or reserved IPv4 network,
// or the IPv6 ones (loopback, unique-local, link-local, multicast, and the forms that carry an
// IPv4 address: mapped, NAT64, 6to4, checked as that address). For posting to URLs strangers
// name (Web Push endpoints): a public name that resolves into the network is refused too.

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

static inline int homeport_private_ipv4(const unsigned char *a) {
    return a[0] == 0 || a[0] == 10 || a[0] == 127 || a[0] >= 224 || (a[0] == 100 && (a[1] & 0xC0) == 64) ||
           (a[0] == 169 && a[1] == 254) || (a[0] == 172 && (a[1] & 0xF0) == 16) ||
           (a[0] == 192 && a[1] == 168) || (a[0] == 192 && a[1] == 0 && a[2] == 0) ||
           (a[0] == 198 && (a[1] & 0xFE) == 18);
}

// The IPv4 address an IPv6 one carries, checked as that address: IPv4-mapped, NAT64's
// well-known /96 and 6to4; NULL for any other.
static inline const unsigned char *homeport_carried_ipv4(const unsigned char *a) {
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    static const unsigned char nat64[12] = {0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0};
    if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0) return a + 12;
    if (a[0] == 0x20 && a[1] == 0x02) return a + 2;
    return NULL;
}

// 64:ff9b:1::/48, NAT64 for a local network (RFC 8215).
static inline int homeport_local_nat64(const unsigned char *a) {
    return a[0] == 0 && a[1] == 0x64 && a[2] == 0xFF && a[3] == 0x9B && a[4] == 0 && a[5] == 1;
}

static inline int homeport_private_address(const struct sockaddr *address) {
    if (address->sa_family == AF_INET) {
        return homeport_private_ipv4((const unsigned char *)&((const struct sockaddr_in *)address)->sin_addr);
    }
    if (address->sa_family != AF_INET6) return 1;
    const unsigned char *a = ((const struct sockaddr_in6 *)address)->sin6_addr.s6_addr;
    static const unsigned char zeros[12] = {0};
    const unsigned char *carried = homeport_carried_ipv4(a);
    if (carried) return homeport_private_ipv4(carried);
    if (homeport_local_nat64(a)) return 1;
    // ::, ::1 and the deprecated IPv4-compatible addresses.
    if (memcmp(a, zeros, 12) == 0) return 1;
    // Unique-local, link-local, site-local (deprecated), multicast.
    return (a[0] & 0xFE) == 0xFC || (a[0] == 0xFE && (a[1] & 0x80) == 0x80) || a[0] == 0xFF;
}

static curl_socket_t homeport_public_socket(void *unused, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)unused;
    if (purpose != CURLSOCKTYPE_IPCXN || homeport_private_address(&address->addr)) return CURL_SOCKET_BAD;
    return socket(address->family, address->socktype, address->protocol);
}

// Link-local addresses, where no push service or distributor lives and a cloud's instance
// metadata does (169.254.169.254; AWS's fd00:ec2::254 over IPv6): 169.254/16 and fe80::/10,
// also in the IPv6 forms that carry an IPv4 address.
static inline int homeport_link_local_address(const struct sockaddr *address) {
    if (address->sa_family == AF_INET) {
        const unsigned char *a = (const unsigned char *)&((const struct sockaddr_in *)address)->sin_addr;
        return a[0] == 169 && a[1] == 254;
    }
    if (address->sa_family != AF_INET6) return 0;
    const unsigned char *a = ((const struct sockaddr_in6 *)address)->sin6_addr.s6_addr;
    static const unsigned char metadata[16] = {0xFD, 0, 0x0E, 0xC2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54};
    // A local NAT64 address carries its IPv4 one last.
    const unsigned char *carried = homeport_local_nat64(a) ? a + 12 : homeport_carried_ipv4(a);
    if (carried) return carried[0] == 169 && carried[1] == 254;
    return (a[0] == 0xFE && (a[1] & 0xC0) == 0x80) || memcmp(a, metadata, 16) == 0;
}

static curl_socket_t homeport_not_link_local_socket(void *unused, curlsocktype purpose,
                                                    struct curl_sockaddr *address) {
    (void)unused;
    if (purpose != CURLSOCKTYPE_IPCXN || homeport_link_local_address(&address->addr)) return CURL_SOCKET_BAD;
    return socket(address->family, address->socktype, address->protocol);
}

/// Where the transfer may connect: 0 anywhere, 1 public addresses only, 2 anywhere but a
/// link-local address.
static inline CURLcode homeport_curl_reach(CURL *curl, int reach) {
    curl_opensocket_callback open = NULL;
    if (reach == 1) open = homeport_public_socket;
    if (reach == 2) open = homeport_not_link_local_socket;
    return curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, open);
}

/// Whether the IPv4 (4 bytes) or IPv6 (16 bytes) address is link-local, as the transfers read it.
static inline int homeport_is_link_local(const unsigned char *bytes, int count) {
    if (count == 4) {
        struct sockaddr_in v4 = {0};
        v4.sin_family = AF_INET;
        memcpy(&v4.sin_addr, bytes, 4);
        return homeport_link_local_address((const struct sockaddr *)&v4);
    }
    if (count != 16) return 0;
    struct sockaddr_in6 v6 = {0};
    v6.sin6_family = AF_INET6;
    memcpy(&v6.sin6_addr, bytes, 16);
    return homeport_link_local_address((const struct sockaddr *)&v6);
}

// An address of an installation whose key the client pinned: a TLS certificate whose public key
// is that key is accepted whatever its CA, name or address; any other certificate is checked as
// without a pin, against the CAs and the name in the URL. libcurl's own name check is off for
// such a transfer (it would refuse the pinned certificate on an IP it does not list), so the name
// is checked here, in the chain's verification.

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

typedef struct homeport_pin {
    unsigned char key_sha256[32];
    int has_key;
    char *host;
    X509_STORE *store;
} homeport_pin;

/// What a transfer's TLS set-up adds to libcurl's (NULL without memory; free it with
/// homeport_pin_free once the easy handle is cleaned up):
/// - `store`, when not NULL: the CA store to verify with, loaded once and shared (a reference is
///   held), instead of libcurl parsing its CA file again for every connection;
/// - `digest`, when not NULL: the SHA-256 of an installation key whose certificate is accepted
///   whatever CA, name or address, on a transfer to `host` (a name, or an IP address without
///   brackets) whose other certificates are checked against the CAs and `host` here.
static inline homeport_pin *homeport_pin_new(const unsigned char *digest, const char *host, X509_STORE *store) {
    homeport_pin *pin = calloc(1, sizeof(homeport_pin));
    if (pin == NULL) return NULL;
    if (digest != NULL) {
        memcpy(pin->key_sha256, digest, 32);
        pin->has_key = 1;
    }
    pin->host = strdup(host);
    if (pin->host == NULL) {
        free(pin);
        return NULL;
    }
    if (store != NULL && X509_STORE_up_ref(store) == 1) pin->store = store;
    return pin;
}

static inline void homeport_pin_free(homeport_pin *pin) {
    if (pin == NULL) return;
    X509_STORE_free(pin->store);
    free(pin->host);
    free(pin);
}

/// The CAs of the PEM file `path`, with libcurl's verification flags (a partial chain ending at a
/// trusted certificate is enough; trusted certificates are tried first); NULL when it cannot be read.
static inline X509_STORE *homeport_ca_store_load(const char *path) {
    X509_STORE *store = X509_STORE_new();
    if (store == NULL) return NULL;
    if (X509_STORE_load_file(store, path) != 1) {
        ERR_clear_error();
        X509_STORE_free(store);
        return NULL;
    }
    X509_STORE_set_flags(store, X509_V_FLAG_PARTIAL_CHAIN | X509_V_FLAG_TRUSTED_FIRST);
    return store;
}

/// The CA file libcurl uses by default (its built-in CURLOPT_CAINFO), or NULL.
static inline const char *homeport_curl_default_ca_file(CURL *curl) {
    char *path = NULL;
    if (curl_easy_getinfo(curl, CURLINFO_CAINFO, &path) != CURLE_OK) return NULL;
    return path;
}

/// Whether `certificate`'s public key is the pinned installation key: a P-256 key whose
/// uncompressed point, or an Ed25519 key whose 32 bytes, hash to the pin (as the wire writes the
/// key, so the pin is the fingerprint's digest).
static inline int homeport_pin_matches(X509 *certificate, const homeport_pin *pin) {
    EVP_PKEY *key = X509_get0_pubkey(certificate);
    if (key == NULL) return 0;
    unsigned char raw[65];
    size_t length = 0;
    if (EVP_PKEY_get_id(key) == EVP_PKEY_ED25519) {
        length = 32;
        if (EVP_PKEY_get_raw_public_key(key, raw, &length) != 1 || length != 32) return 0;
    } else if (EVP_PKEY_get_id(key) == EVP_PKEY_EC) {
        char group[32] = {0};
        size_t groupLength = 0;
        if (EVP_PKEY_get_group_name(key, group, sizeof group, &groupLength) != 1
            || strcmp(group, "prime256v1") != 0) {
            ERR_clear_error();
            return 0;
        }
        if (EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", raw, sizeof raw, &length) != 1
            || length != 65 || raw[0] != 0x04) {
            ERR_clear_error();
            return 0;
        }
    } else {
        return 0;
    }
    unsigned char digest[32];
    unsigned int digestLength = 0;
    if (EVP_Digest(raw, length, digest, &digestLength, EVP_sha256(), NULL) != 1 || digestLength != 32) return 0;
    return CRYPTO_memcmp(digest, pin->key_sha256, 32) == 0;
}

/// The chain's verification: the pinned key passes; anything else is the CAs' and the name's.
static inline int homeport_pin_verify(X509_STORE_CTX *store, void *argument) {
    const homeport_pin *pin = argument;
    X509 *leaf = X509_STORE_CTX_get0_cert(store);
    if (leaf != NULL && pin->has_key && homeport_pin_matches(leaf, pin)) {
        X509_STORE_CTX_set_error(store, X509_V_OK);
        return 1;
    }
    X509_VERIFY_PARAM *parameters = X509_STORE_CTX_get0_param(store);
    if (X509_VERIFY_PARAM_set1_ip_asc(parameters, pin->host) != 1) {
        ERR_clear_error();
        // As libcurl: no partial wildcard (f*.example.com), and the subject's common name counts
        // only in a certificate with no subjectAltName at all (OpenSSL would read it whenever no
        // DNS name is listed).
        unsigned int flags = X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS;
        if (leaf != NULL && X509_get_ext_by_NID(leaf, NID_subject_alt_name, -1) >= 0) {
            flags |= X509_CHECK_FLAG_NEVER_CHECK_SUBJECT;
        }
        X509_VERIFY_PARAM_set_hostflags(parameters, flags);
        if (X509_VERIFY_PARAM_set1_host(parameters, pin->host, 0) != 1) {
            X509_STORE_CTX_set_error(store, X509_V_ERR_UNSPECIFIED);
            return 0;
        }
    }
    return X509_verify_cert(store);
}

static inline CURLcode homeport_pin_context(CURL *curl, void *context, void *argument) {
    (void)curl;
    const homeport_pin *pin = argument;
    if (pin->store != NULL) SSL_CTX_set1_cert_store((SSL_CTX *)context, pin->store);
    if (pin->has_key) {
        SSL_CTX_set_cert_verify_callback((SSL_CTX *)context, homeport_pin_verify, argument);
        // No certificate is verified after the handshake (a TLS 1.2 renegotiation).
        SSL_CTX_set_options((SSL_CTX *)context, SSL_OP_NO_RENEGOTIATION);
    }
    return CURLE_OK;
}

/// Sets a transfer's TLS up with `pin` (which must outlive the easy handle): the shared CA store,
/// and with a key, that key accepted besides the CAs. The peer is still verified, never skipped,
/// and with a key no TLS session is resumed past the check. An HTTPS
/// proxy's handshake goes through the same check (libcurl has one callback for both): it fails
/// unless the proxy's certificate holds the key or names the origin's host.
static inline CURLcode homeport_curl_pin(CURL *curl, homeport_pin *pin) {
    CURLcode result = curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, homeport_pin_context);
    if (result == CURLE_OK) result = curl_easy_setopt(curl, CURLOPT_SSL_CTX_DATA, (void *)pin);
    if (result == CURLE_OK) result = curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    // The shared store replaces the files: libcurl loads none of them for this connection.
    if (result == CURLE_OK && pin->store != NULL) result = curl_easy_setopt(curl, CURLOPT_CAINFO, (char *)NULL);
    if (result == CURLE_OK && pin->store != NULL) result = curl_easy_setopt(curl, CURLOPT_CAPATH, (char *)NULL);
    if (result == CURLE_OK && pin->has_key) result = curl_easy_setopt(curl, CURLOPT_SSL_SESSIONID_CACHE, 0L);
    if (result == CURLE_OK && pin->has_key) result = curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    return result;
}
