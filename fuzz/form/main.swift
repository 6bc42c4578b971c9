// The two parsers of outside text in HomeportHTTP: application/x-www-form-urlencoded bodies and
// Cookie headers. See fuzz/README.md.
import Foundation

/// One input: the bytes are a form body, and the same bytes (as text) a Cookie header.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Data(bytes: data, count: size)
    let text = String(decoding: body, as: UTF8.self)
    let request = HTTPRequest(
        method: .post, path: "/login", headers: ["Content-Type": "application/x-www-form-urlencoded", "Cookie": text],
        body: body)
    checkForm(request.formFields, text: text)
    checkCookies(request.cookies, header: text)
    return 0
}

/// The form fields are the ones the bytes say (split on the bytes `&` and `=`, as the
/// URL standard's urlencoded parser does), and they come back the same when written out again.
func checkForm(_ fields: [String: String], text: String) {
    require(fields == referenceForm(text), "form fields \(fields) are not the ones \(text.debugDescription) holds")
    var written: [String] = []
    for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
        written.append(formEncoded(name) + "=" + formEncoded(value))
    }
    let again = HTTPRequest.parseURLEncoded(written.joined(separator: "&"))
    require(again == fields, "form fields \(fields) came back as \(again)")
}

/// The cookies are the ones the header says (split on the bytes `;` and `=`), trimmed, the first
/// of a name kept.
func checkCookies(_ cookies: [String: String], header: String) {
    require(cookies == referenceCookies(header), "cookies \(cookies) are not the ones \(header.debugDescription) holds")
    for (name, value) in cookies {
        require(name == name.trimmingCharacters(in: .whitespaces), "cookie name \(name.debugDescription) not trimmed")
        require(
            value == value.trimmingCharacters(in: .whitespaces), "cookie value \(value.debugDescription) not trimmed")
        require(
            !name.unicodeScalars.contains(";") && !name.unicodeScalars.contains("="),
            "cookie name \(name.debugDescription)")
        require(!value.unicodeScalars.contains(";"), "cookie value \(value.debugDescription) holds a ;")
    }
}

/// The fields, parsed byte by byte with the same rules as ``HTTPRequest/parseURLEncoded(_:)``.
func referenceForm(_ text: String) -> [String: String] {
    var result: [String: String] = [:]
    for pair in Array(text.utf8).split(separator: UInt8(ascii: "&")) {
        let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
        guard let name = formDecoded(parts[0]) else { continue }
        result[name] = parts.count > 1 ? formDecoded(parts[1]) ?? "" : ""
    }
    return result
}

/// `+` as a space (the byte), then percent-decoding; `nil` when that is not UTF-8.
func formDecoded(_ bytes: ArraySlice<UInt8>) -> String? {
    String(decoding: bytes.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
        .removingPercentEncoding
}

/// Every byte but the unreserved ones percent-encoded.
func formEncoded(_ text: String) -> String {
    text.addingPercentEncoding(withAllowedCharacters: unreserved)!
}

/// The characters a form never needs to encode.
let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

/// The cookies, parsed byte by byte with the same rules as ``HTTPRequest/cookies``.
func referenceCookies(_ header: String) -> [String: String] {
    var result: [String: String] = [:]
    for pair in Array(header.utf8).split(separator: UInt8(ascii: ";")) {
        let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1)
        guard parts.count == 2 else { continue }
        let name = String(decoding: parts[0], as: UTF8.self).trimmingCharacters(in: .whitespaces)
        if result[name] == nil {
            result[name] = String(decoding: parts[1], as: UTF8.self).trimmingCharacters(in: .whitespaces)
        }
    }
    return result
}
