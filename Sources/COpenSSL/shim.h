#ifndef OFFLINESTORE_COPENSSL_SHIM_H
#define OFFLINESTORE_COPENSSL_SHIM_H

// The few libcrypto functions the server needs (token hashing, pull cursor MACs, constant-time
// comparison, random bytes), from Debian's libssl-dev. None is variadic, so no wrappers are needed.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#endif
