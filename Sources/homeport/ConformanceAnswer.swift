import Foundation
import HomeportClient

/// A check that could not go on: what was seen instead, in a sentence.
struct ProbeFailure: Error, CustomStringConvertible {
    /// The sentence.
    let description: String
    /// Whether the request got no answer (it may have been sent, and acted on).
    let unanswered: Bool

    init(_ description: String, unanswered: Bool = false) {
        self.description = description
        self.unanswered = unanswered
    }
}

/// One answer of the server under test, read defensively: nothing in it is trusted to have the
/// shape it should.
struct ConformanceAnswer: Sendable {
    /// The answer as the transport read it.
    let response: ClientResponse

    init(_ response: ClientResponse) {
        self.response = response
    }

    /// The status.
    var status: Int { response.status }
    /// Header fields, names lowercased; a field sent twice holds both values joined with `", "`.
    var headers: [String: String] { response.headers }
    /// The body.
    var body: Data { response.body }

    /// The body as JSON, or `nil`.
    var json: JSONValue? { JSONValue.parse(body) }

    /// Whether exactly one `Content-Type` came and it is `application/json` (parameters allowed).
    var isJSONType: Bool {
        headers["content-type"]?.contains(",") == false && response.isJSON
    }

    /// Whether this is a web page (an HTML content type, or a body that starts with markup).
    var isHTML: Bool { response.isHTML }

    /// The `Content-Type`, cleaned for printing.
    var contentType: String {
        headers["content-type"].map { ServerText.clean($0, limit: 60) } ?? "no Content-Type"
    }

    /// The cookies the answer sets, as `name=value` pairs (attributes dropped).
    var cookies: [(name: String, value: String)] {
        guard let header = headers["set-cookie"] else { return [] }
        // Repeated fields are joined with ", "; a cookie starts where a name and "=" follow a comma.
        let pattern = #"(?:^|,)\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)=([^;,]*)"#
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return [] }
        let text = header as NSString
        return expression.matches(in: header, range: NSRange(location: 0, length: text.length)).map {
            (text.substring(with: $0.range(at: 1)), text.substring(with: $0.range(at: 2)))
        }
    }

    /// Whether the answer sets a cookie.
    var setsCookie: Bool { headers["set-cookie"] != nil }

    /// `401 (application/json)`, with the error code when the body names one.
    var summary: String {
        var text = "\(status) (\(isHTML ? "a web page" : contentType))"
        if let code = errorCode { text += " " + code }
        return text
    }

    /// The error code the body names: the API's `error.code`, or an allauth envelope's `errors[].code`.
    var errorCode: String? {
        guard isJSONType, let json else { return nil }
        if let code = json["error"]?["code"]?.string { return ServerText.clean(code, limit: 60) }
        let codes = (json["errors"]?.array ?? []).compactMap { $0["code"]?.string }
        return codes.isEmpty ? nil : codes.map { ServerText.clean($0, limit: 60) }.joined(separator: ", ")
    }

    /// The body as a JSON object, when the answer is a `status` JSON answer; otherwise a failure
    /// saying what came instead.
    func object(expecting expected: Int) throws -> JSONValue {
        if (300..<400).contains(status) {
            let target = headers["location"].map { ServerText.clean($0, limit: 120) } ?? "nowhere"
            throw ProbeFailure("\(status): a redirect to \(target), not the API's answer")
        }
        if isHTML { throw ProbeFailure("\(status) with a web page (HTML), not the API's JSON") }
        guard status == expected else { throw ProbeFailure("\(summary), expected \(expected)") }
        guard isJSONType else {
            throw ProbeFailure("\(status) with Content-Type \(contentType), not application/json")
        }
        guard let json, json.object != nil else {
            throw ProbeFailure("\(status) with a body that is not a JSON object (\(body.count) bytes)")
        }
        return json
    }

    /// The body as an allauth envelope with `status` in both the HTTP status and its `status` member.
    func envelope(expecting expected: Int) throws -> JSONValue {
        let json = try object(expecting: expected)
        guard json["status"]?.integer == Int64(expected) else {
            throw ProbeFailure(
                "\(status), but the envelope's status is \(json["status"]?.shown ?? "missing"), not \(expected)")
        }
        return json
    }

    /// Whether `other` is the same answer: the same status and the same bytes or the same JSON.
    func sameAnswer(as other: ConformanceAnswer) -> (same: Bool, identicalBytes: Bool) {
        guard status == other.status else { return (false, false) }
        if body == other.body { return (true, true) }
        guard let mine = json, let theirs = other.json else { return (false, false) }
        return (mine == theirs, false)
    }
}
