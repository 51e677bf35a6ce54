// The create-an-organization form (/orgs): suggests a slug from the name until the person types
// one of their own, and shows the address it makes. The server makes the same one from the name
// when the field is left empty (web/orgs/org-pages.controller.ts suggestSlug), so this is a help,
// never needed.
const nameField = document.getElementById('org-name');
const slugField = document.getElementById('org-slug');
const preview = document.querySelector('[data-slug-preview]');
const suggest = (name) =>
  name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+/, '').slice(0, 40).replace(/-+$/, '');
if (nameField && slugField) {
  let ownSlug = slugField.value !== '';
  const show = () => { if (preview) preview.textContent = slugField.value || suggest(nameField.value) || '…'; };
  slugField.addEventListener('input', () => { ownSlug = slugField.value !== ''; show(); });
  nameField.addEventListener('input', () => { if (!ownSlug) slugField.value = suggest(nameField.value); show(); });
  show();
}
