// What an authenticator and a browser send at registration and sign-in: CBOR items (attestation
// objects, COSE keys) and authenticator data, read by HomeportWebAuthn. See fuzz/README.md.

/// One input: the bytes are read as a CBOR item, as authenticator data and as a COSE key.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let item = try? CBORReader.decode(bytes) {
        // What is read is written back as an item that reads the same.
        let encoded = item.encoded
        require((try? CBORReader.decode(encoded)) == item, "a CBOR item reads differently once written")
        if let key = try? COSEKey(item) {
            require((try? COSEKey(encoded: key.encoded)) == key, "a COSE key reads differently once stored")
            require(!key.isValidSignature(Array(bytes.prefix(64)), of: bytes), "a signature of nothing verifies")
        }
    }
    if let authenticator = try? AuthenticatorData(bytes) {
        require(authenticator.bytes == bytes && authenticator.relyingPartyIDHash.count == 32, "authenticator data lost")
        require(authenticator.credential.map { !$0.id.isEmpty && $0.id.count <= 1023 } ?? true, "a credential id")
        require(!(authenticator.backedUp && !authenticator.backupEligible), "backed up, but not eligible")
    }
    return 0
}
