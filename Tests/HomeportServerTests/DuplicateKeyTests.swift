import Foundation
import HomeportHTTP
import HomeportTestSupport
import HomeportWire
import Testing

/// A JSON body that names a key twice is refused wherever Homeport reads JSON from outside:
/// Foundation reads the first value, Python and JavaScript the last, so a proxy, a product or a
/// log could each see another request than Homeport did.
@Suite("A key named twice in a JSON body is refused", .tags(.process))
struct DuplicateKeyTests {
    @Test("the app door's sign-up and sign-in, and a device registration, answer 400 and change nothing")
    func appDoor() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(serve: [
            "--database", "sqlite:" + directory.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000",
        ])
        defer { server.stop() }
        func post(_ path: String, _ body: String, token: String? = nil) throws -> RawResponse {
            var headers = [("Content-Type", "application/json")]
            if let token { headers.append(("X-Session-Token", token)) }
            return try RawHTTP.request(
                port: server.port, method: "POST", path: path, headers: headers, body: Data(body.utf8))
        }
        let signup = AllauthAppPath.base + "/" + AllauthAppPath.signup
        let doubled = try post(
            signup, #"{"email":"mallory@example.com","email":"ada@example.com","password":"correct horse battery"}"#)
        #expect(doubled.status == 400, "\(doubled.text)")
        let listed = try ServerProcess.run(["users", "list", "--database", "sqlite:" + directory.file("h.sqlite")])
        #expect(!listed.output.contains("@example.com"), "no account was made: \(listed.output)")

        let made = try post(signup, #"{"email":"ada@example.com","password":"correct horse battery"}"#)
        let token = try #require(made.sessionToken)
        let login = try post(
            AllauthAppPath.base + "/" + AllauthAppPath.login,
            #"{"email":"ada@example.com","password":"wrong","password":"correct horse battery"}"#)
        #expect(login.status == 400 && login.sessionToken == nil, "\(login.text)")

        let device = String(repeating: "ab", count: 32)
        let registered = try post(
            HomeportPath.pushDevices,
            #"{"token":"\#(device)","environment":"sandbox","environment":"production"}"#, token: token)
        #expect(registered.status == 400, "\(registered.text)")
        let devices = try ServerProcess.run([
            "push", "devices", "--json", "--database", "sqlite:" + directory.file("h.sqlite"),
        ])
        #expect(!devices.output.contains(device), "nothing was registered: \(devices.output)")
    }

    @Test("HTTPRequest.decodeJSON, which a product's routes use, refuses a key named twice at any depth")
    func productRoutes() {
        struct Body: Decodable { var title: String }
        for (text, valid) in [
            (#"{"title":"a"}"#, true), (#"{"title":"a","title":"b"}"#, false),
            (#"{"title":"a","nested":{"x":1,"x":2}}"#, false), (#"{"title":"a","t\u0069tle":"b"}"#, false),
            (#"{"title":"a","list":[{"x":1},{"x":2}]}"#, true),
        ] {
            let request = HTTPRequest(method: .post, path: "/", headers: HTTPHeaders(), body: Data(text.utf8))
            if valid {
                #expect((try? request.decodeJSON(Body.self))?.title == "a", "\(text)")
            } else {
                #expect(throws: HTTPError.self, "\(text)") { try request.decodeJSON(Body.self) }
            }
        }
    }
}
