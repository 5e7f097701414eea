// A <select data-autosubmit> sends its form as soon as its value changes; without JavaScript the
// form's own submit button (in <noscript>) does the same.
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field instanceof HTMLSelectElement && field.hasAttribute("data-autosubmit") && field.form) {
    field.form.requestSubmit();
  }
});
