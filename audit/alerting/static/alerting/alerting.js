// Confirm destructive actions; forms opt in with data-confirm (no inline handlers, CSP-friendly).
document.querySelectorAll("form[data-confirm]").forEach((form) => {
  form.addEventListener("submit", (event) => {
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
});
