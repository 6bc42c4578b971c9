import CMicroHTTPD

extension HTTPResponse {
    /// The `Strict-Transport-Security` value the server adds to every answer over HTTPS.
    static let strictTransportSecurity = "max-age=31536000"

    /// libmicrohttpd's copy of this answer's body (not its stream) and fields
    /// (``addLibraryFields(to:strictTransport:closing:)``); `nil` when libmicrohttpd makes none.
    func libraryBuffer(strictTransport: Bool, closing: Bool) -> OpaquePointer? {
        let made = body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let made else { return nil }
        addLibraryFields(to: made, strictTransport: strictTransport, closing: closing)
        return made
    }

    /// Adds this answer's fields to libmicrohttpd's `made`, and, unless the answer names its own,
    /// `Connection: close` when the connection is `closing` and HSTS when served over HTTPS
    /// (browsers then keep to HTTPS for this host).
    func addLibraryFields(to made: OpaquePointer, strictTransport: Bool, closing: Bool) {
        for field in headers {
            _ = MHD_add_response_header(made, field.name, field.value)
        }
        if closing && !headers.contains("Connection") {
            _ = MHD_add_response_header(made, "Connection", "close")
        }
        if strictTransport && !headers.contains("Strict-Transport-Security") {
            _ = MHD_add_response_header(made, "Strict-Transport-Security", Self.strictTransportSecurity)
        }
    }
}
