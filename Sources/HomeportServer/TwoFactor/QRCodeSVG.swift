import CQRencode

/// A QR code drawn as inline SVG by libqrencode, for a page whose policy allows no script and
/// no image from anywhere (the web door's): one path of dark modules on a white square with the
/// four-module quiet zone the standard asks for.
enum QRCodeSVG {
    /// The SVG of `text` (error correction M, byte mode), or `nil` when it does not fit a QR code.
    static func svg(_ text: String, id: String, size: Int = 220) -> String? {
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let quiet = 4
        let side = width + 2 * quiet
        var path = ""
        for y in 0..<width {
            for x in 0..<width where code.pointee.data[y * width + x] & 1 == 1 {
                path += "M\(x + quiet) \(y + quiet)h1v1h-1z"
            }
        }
        return """
            <svg id="\(id)" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(side) \(side)" width="\(size)" \
            height="\(size)" role="img" aria-label="QR code" shape-rendering="crispEdges">\
            <rect width="\(side)" height="\(side)" fill="#fff"/><path d="\(path)" fill="#000"/></svg>
            """
    }
}
