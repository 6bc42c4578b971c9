// The identity answer a client reads from `GET /api/v1/server-identity`, as IdentityProbe judges
// it, and the app-info answer that repeats the installation id. See fuzz/README.md.
import Foundation
import HomeportWire

/// One input: the bytes are the answer's body.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Data(bytes: data, count: size)
    checkInstanceID(String(decoding: body, as: UTF8.self))
    if let identity = roundTrip(ServerIdentity.self, body) { checkInstanceID(identity.instanceId.description) }
    if let info = roundTrip(AppInfo.self, body), let id = info.instanceId { checkInstanceID(id.description) }
    for (status, contentType) in answers {
        var headers: [String: String] = [:]
        if let contentType { headers["content-type"] = contentType }
        let response = ClientResponse(status: status, headers: headers, body: body)
        checkClassification(response, expected: nil)
        checkClassification(response, expected: enrolled)
        checkClassification(response, expected: pinned)
    }
    checkMove(String(decoding: body, as: UTF8.self))
    return 0
}

/// The address a redirect may make a candidate for the primary (which it becomes only once it
/// answers the credential-free probe as the installation): only `https://`, on another origin
/// than the primary's, without credentials or a query; from a plain-HTTP primary, only on its
/// own host (its redirect could be anyone's on the path).
func checkMove(_ location: String) {
    for text in ["http://books.example.net:8080", "https://books.example.net:8443"] {
        guard let primary = try? ServerAddress(parsing: text, allowHTTP: true) else { continue }
        for target in [URL(string: location), URL(string: location, relativeTo: URL(string: primary.url))?.absoluteURL]
        {
            guard let target, let moved = IdentityProbe.movedToHTTPS(from: primary, to: target) else { continue }
            let url = URL(string: moved.url)
            require(url?.scheme == "https", "moved to \(moved.url), not https")
            require(moved.origin != primary.origin, "moved to \(moved.url), the primary's own origin")
            require(url?.user == nil && url?.query == nil, "moved to \(moved.url), with credentials or a query")
            if text.hasPrefix("http:") {
                require(url?.host == "books.example.net", "a plain-HTTP primary moved to \(moved.url), another host")
            }
        }
    }
}

/// Status and content type of the answers the body is tried as.
let answers: [(Int, String?)] = [
    (200, "application/json"), (200, nil), (200, "text/html"), (503, "application/json; charset=utf-8"),
    (404, "application/json"),
]

/// The identity a client enrolled.
let enrolled = ServerIdentity(
    product: "bookorbit", protocolVersion: 1, instanceId: InstanceID("6f1c2a8e-0b7d-4e3a-9c55-2d1e8f4a7b90")!)

/// The same identity with its installation key pinned.
let pinned = ServerIdentity(
    product: enrolled.product, protocolVersion: 1, instanceId: enrolled.instanceId,
    publicKey: IdentityProof.writeKey(Array(repeating: 0x2A, count: 32)))

/// The challenge the probe sent.
let challenge = IdentityProof.base64URL(Array(repeating: 0x5C, count: 32))

/// An InstanceID that parses writes itself in lowercase and parses back to itself, in either case.
func checkInstanceID(_ text: String) {
    guard let id = InstanceID(text) else { return }
    let written = id.description
    require(
        written.utf8.count == 36 && written == written.lowercased(),
        "InstanceID \(text.debugDescription) wrote \(written)")
    require(InstanceID(written) == id, "InstanceID \(written) does not parse back to itself")
    require(InstanceID(written.uppercased()) == id, "InstanceID \(written) uppercased is another id")
}

/// What a probe concludes from one answer, and the promises every conclusion keeps.
func checkClassification(_ response: ClientResponse, expected: ServerIdentity?) {
    let outcome = IdentityProbe.classify(response, expected: expected, challenge: challenge, host: "books.example.net")
    require(
        IdentityProbe.classify(response, expected: expected, challenge: challenge, host: "books.example.net")
            == outcome, "classify is not deterministic")
    let decoded = try? JSONDecoder().decode(ServerIdentity.self, from: response.body)
    switch outcome {
    case .match(let identity):
        require(response.status == 200 && !response.isHTML, "a match from a \(response.status) answer or a page")
        require(decoded?.instanceId == identity.instanceId, "a match with another id than the body's")
        require(identity.product == ServerText.clean(identity.product), "a matched product is not clean")
        require(
            !identity.product.unicodeScalars.contains(where: ServerText.isControl),
            "a matched product holds a control character")
        if let expected {
            require(identity == expected, "a match that is not the enrolled identity: \(identity)")
        } else {
            require(!identity.product.isEmpty && identity.protocolVersion >= 1, "a match without product or version")
        }
    case .mismatch(let seen):
        require(expected != nil && seen != expected?.instanceId, "a mismatch without an enrolled id or with it")
        require(decoded?.instanceId == seen, "a mismatch naming another id than the body's")
    case .productMismatch(let product, let version):
        require(expected != nil && decoded?.instanceId == expected?.instanceId, "a product mismatch of another id")
        require(product != expected?.product || version != expected?.protocolVersion, "a product mismatch that matches")
    case .identityUnavailable:
        require(response.status == 503, "identity_unavailable from a \(response.status) answer")
    case .olderServer:
        require(response.status == 404, "an older server from a \(response.status) answer")
    case .notAnAPI:
        require(response.isHTML, "not an API, but not HTML either")
    case .notHomeport, .unreachable:
        break
    case .offHostRedirect, .movedToHTTPS:
        fatalError("classify followed a redirect")
    case .noAnswerInTime:
        fatalError("classify judged an answer that came as no answer in time")
    case .unproven:
        // Only where a key is in play: one the answer names, or one pinned.
        require(
            response.status == 200 && (decoded?.publicKey != nil || expected?.publicKey != nil),
            "unproven without a key in play")
        if let expected { require(decoded?.instanceId == expected.instanceId, "unproven for another id") }
    }
}
