// The console's Copy buttons: copy the text of the input named by data-copy (no inline script:
// the Content-Security-Policy refuses it). Without the clipboard API the text is selected instead.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const input = document.getElementById(button.dataset.copy);
  if (!input) return;
  input.select();
  const done = () => { button.textContent = "Copied"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(input.value).then(done, () => {});
  } else {
    done();
  }
});
