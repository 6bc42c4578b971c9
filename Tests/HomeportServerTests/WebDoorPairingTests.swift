import Foundation
import HomeportServer
import HomeportTestSupport
import HomeportWire
import Testing

@Suite("The web door's pairing link", .tags(.browser))
struct WebDoorPairingTests {
    @Test("the account page shows the installation's pairing link, as text and as a QR code; signed out, nothing")
    func accountPageShowsThePairingLink() throws {
        try withAccounts(.sqlite, publicURL: "https://books.example.net") { server in
            let browser = Browser(port: server.port)
            browser.origin = "https://books.example.net"
            #expect(try browser.get("/account").status == 303, "signed out: no account page")
            _ = try browser.get("/account/signup")
            let signup = try browser.post(
                "/account/signup", ["email": "ada@example.com", "password": "correct horse battery", "website": ""])
            #expect(signup.status == 303)
            let home = try browser.get("/account")
            #expect(home.status == 200)
            let shown = try #require(
                home.text.components(separatedBy: "<code id=\"pairing-link\">").dropFirst().first?
                    .components(separatedBy: "</code>").first)
            let link = try PairingLink(parsing: shown.replacingOccurrences(of: "&amp;", with: "&"))
            let installation = try server.application.identity.current()
            #expect(link.instanceID == installation.instanceID)
            #expect(link.keyFingerprint == installation.keyFingerprint)
            #expect(link.url == "https://books.example.net")
            #expect(home.text.contains("<svg") && home.text.contains("id=\"pairing-qr\""))
        }
    }
}
