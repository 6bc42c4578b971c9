/// The script of the web door's passkey sections (``WebPage/passkeyLoginSection(csrf:)`` and
/// ``WebPage/passkeysSection(csrf:passkeys:notice:errors:hasPassword:)``), served from this
/// origin only: it asks the server for the ceremony's options, runs it in the browser, and hands
/// the answer back in the section's form, which the browser then posts as any form. Every
/// failure is said on the page, in words.
enum PasskeyScripts {
    static let page = #"""
        "use strict";
        (function () {
          const status = document.getElementById("passkey-status");
          const say = (text) => { if (status) status.textContent = text; };
          const bytes = (text) => {
            const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
            return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
          };
          const text = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer)))
            .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

          async function options(form, extra) {
            const body = new URLSearchParams({
              csrf_token: form.elements.csrf_token.value, website: "", ...extra,
            });
            const answer = await fetch(form.dataset.options, { method: "POST", body, credentials: "same-origin" });
            if (!answer.ok) {
              let message = `The server refused it (${answer.status}).`;
              try { message = (await answer.json()).error.message; } catch (ignored) {}
              throw new Error(message);
            }
            return (await answer.json()).publicKey;
          }

          function encode(credential) {
            if (typeof credential.toJSON === "function") return credential.toJSON();
            const response = {};
            for (const key of ["clientDataJSON", "attestationObject", "authenticatorData", "signature", "userHandle"]) {
              if (credential.response[key]) response[key] = text(credential.response[key]);
            }
            if (credential.response.getTransports) response.transports = credential.response.getTransports();
            return {
              id: credential.id, rawId: text(credential.rawId), type: credential.type, response,
              clientExtensionResults: credential.getClientExtensionResults(),
              authenticatorAttachment: credential.authenticatorAttachment,
            };
          }

          // Conditional mediation: where the browser offers passkeys in the address field's
          // autofill, the request starts when the person first focuses the field (one challenge,
          // not one per page view). It says nothing on the page: the person may be typing a
          // password. The button waits for its options, then aborts it, before asking on its own
          // (the challenge the button's answer is checked against is then the button's).
          let conditional = null;
          const field = document.querySelector('input[autocomplete~="webauthn"]');
          const loginForm = document.getElementById("passkey-login");
          async function offerInAutofill() {
            if (!(await PublicKeyCredential.isConditionalMediationAvailable())) return;
            const controller = new AbortController();
            const asked = options(loginForm, {});
            conditional = { controller, asked };
            try {
              const publicKey = await asked;
              if (controller.signal.aborted) return;
              publicKey.challenge = bytes(publicKey.challenge);
              publicKey.allowCredentials = [];
              const credential = await navigator.credentials.get({
                publicKey, mediation: "conditional", signal: controller.signal,
              });
              loginForm.elements.credential.value = JSON.stringify(encode(credential));
              say("Signing in…");
              loginForm.submit();
            } catch (error) {
              // Dismissed: offered again at the next focus. Aborted for the button, or refused
              // (a spent budget): nothing more until the page loads again.
              if (error.name === "NotAllowedError" && !controller.signal.aborted) {
                field.addEventListener("focus", offerInAutofill, { once: true });
              }
            }
          }
          if (field && loginForm && window.PublicKeyCredential && PublicKeyCredential.isConditionalMediationAvailable) {
            field.addEventListener("focus", offerInAutofill, { once: true });
          }

          async function signIn(form) {
            if (!window.PublicKeyCredential) throw new Error("This browser has no passkeys.");
            if (conditional) {
              conditional.controller.abort();
              await conditional.asked.catch(() => {});
              conditional = null;
            }
            say("Asking your device…");
            const publicKey = await options(form, {});
            publicKey.challenge = bytes(publicKey.challenge);
            publicKey.allowCredentials = (publicKey.allowCredentials || []).map((c) => ({ ...c, id: bytes(c.id) }));
            const credential = await navigator.credentials.get({ publicKey });
            form.elements.credential.value = JSON.stringify(encode(credential));
            say("Signing in…");
            form.submit();
          }

          async function create(form) {
            if (!window.PublicKeyCredential) throw new Error("This browser has no passkeys.");
            say("Confirming your password…");
            const publicKey = await options(form, { password: form.elements.password.value });
            form.elements.password.value = "";
            publicKey.challenge = bytes(publicKey.challenge);
            publicKey.user.id = bytes(publicKey.user.id);
            publicKey.excludeCredentials = (publicKey.excludeCredentials || []).map((c) => ({ ...c, id: bytes(c.id) }));
            say("Asking your device…");
            const credential = await navigator.credentials.create({ publicKey });
            form.elements.credential.value = JSON.stringify(encode(credential));
            say("Adding it…");
            form.submit();
          }

          for (const [button, formID, action] of [
            ["passkey-signin", "passkey-login", signIn], ["passkey-create", "passkey-add", create],
            ["passkey-use", "passkey-factor", signIn],
          ]) {
            const element = document.getElementById(button);
            const form = document.getElementById(formID);
            if (element && form) {
              element.addEventListener("click", () => action(form).catch((error) => say(
                error.name === "NotAllowedError" ? "Cancelled, or this device has no passkey for this site." : error.message)));
            }
          }
        })();
        """#
}
