#ifndef OFFLINESTORE_COPENSSL_SHIM_H
#define OFFLINESTORE_COPENSSL_SHIM_H

// The libcrypto functions the server needs (token hashing, pull cursor MACs, constant-time
// comparison, random bytes, JSON Web Token signatures with RSA and P-256 keys), from Debian's
// libssl-dev. None is variadic; the one macro needed is wrapped below.
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>

// A macro built of other macros, which Swift does not import.
static inline int ostore_evp_pkey_public_key_selection(void) { return EVP_PKEY_PUBLIC_KEY; }

#endif
