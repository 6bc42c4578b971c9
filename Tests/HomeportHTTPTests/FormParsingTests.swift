import Foundation
import HomeportHTTP
import Testing

@Suite("Forms and cookies split on bytes: no character hides a separator")
struct FormParsingTests {
    @Test("a cookie ending in a joining character does not hide the cookies after it")
    func joiningCharacterBeforeSemicolon() {
        // U+0600 joins the character after it; U+0301 combines with the one before it.
        for header in ["theme=x\u{0600}; homeport_session=abc", "theme=x; \u{0301}homeport_session=abc; a=b"] {
            let request = HTTPRequest(method: .get, path: "/", headers: ["Cookie": header])
            let cookies = request.cookies
            #expect(cookies["theme"]?.hasPrefix("x") == true, "\(header.debugDescription)")
            #expect(cookies.values.contains("abc"), "\(header.debugDescription): \(cookies)")
        }
        let plain = HTTPRequest(method: .get, path: "/", headers: ["Cookie": "a=1; b = 2 ;c=3=4; a=5; novalue"]).cookies
        #expect(plain == ["a": "1", "b": "2", "c": "3=4"])
    }

    @Test("form fields split on & and = even next to combining characters; + is a space")
    func combiningCharactersInForms() {
        #expect(HTTPRequest.parseURLEncoded("a=1&\u{0301}b=2") == ["a": "1", "\u{0301}b": "2"])
        #expect(HTTPRequest.parseURLEncoded("a=x+\u{0301}y") == ["a": "x \u{0301}y"])
        #expect(HTTPRequest.parseURLEncoded("a\u{0600}=1&b=2") == ["a\u{0600}": "1", "b": "2"])
        #expect(
            HTTPRequest.parseURLEncoded("a=%2F&b=two+words&c&=x&d=%zz") == [
                "a": "/", "b": "two words", "c": "", "": "x", "d": "",
            ])
    }
}
