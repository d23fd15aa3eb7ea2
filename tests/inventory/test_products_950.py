"""The Ascend 950 products: the Atlas 350 card is loadable in its documented sizes; the Atlas 850
servers and the 950 SuperPoD are refused at load with what is not documented yet."""

from __future__ import annotations

import pytest
import yaml

from ascendprep.base.yamlsource import InputError
from ascendprep.inventory.load import inventory_from_text
from ascendprep.inventory.products import PRODUCTS, UNDOCUMENTED_PRODUCTS, Generation


def inventory(product="atlas-350", npus=None, **extra):
    data = {"name": "t", "product": product}
    if npus is not None:
        data["npus_per_node"] = npus
    data["device_network"] = {"subnet": "10.20.0.0/24"}
    data["nodes"] = [{"name": "n[1-2]", "host": "10.0.0.[11-12]"}]
    data.update(extra)
    return yaml.safe_dump(data, sort_keys=False)


@pytest.mark.parametrize(("npus", "topo"), [(1, "atlas_350_1.json"), (2, "atlas_350_2.json"), (4, "atlas_350_3.json")])
def test_atlas_350_loads_with_one_two_or_four_cards_and_names_its_topology_file(npus, topo):
    inv = inventory_from_text(inventory(npus=npus))
    assert inv.product.id == "atlas-350"
    assert inv.product.generation is Generation.ASCEND_950
    assert inv.product.chip == "950PR"
    assert inv.product.ranktable_version == "2.0"
    assert inv.npus_per_node == npus
    assert inv.product.topology_file(npus) == f"/usr/local/Ascend/driver/topo/950/{topo}"


def test_atlas_350_defaults_to_four_cards():
    assert inventory_from_text(inventory()).npus_per_node == 4


@pytest.mark.parametrize("npus", [3, 8])
def test_atlas_350_refuses_card_counts_the_vendor_does_not_document(npus):
    with pytest.raises(InputError) as err:
        inventory_from_text(inventory(npus=npus), file="inv.yaml")
    text = str(err.value)
    assert "inv.yaml:3:" in text and "npus_per_node" in text


@pytest.mark.parametrize("product", ["atlas-850", "atlas-950-superpod"])
def test_undocumented_950_products_are_refused_at_load_with_what_is_missing(product):
    with pytest.raises(InputError) as err:
        inventory_from_text(inventory(product=product), file="inv.yaml")
    text = str(err.value)
    assert "inv.yaml:2:" in text
    assert "not documented yet" in text
    for missing in UNDOCUMENTED_PRODUCTS[product].undocumented:
        assert missing in text


def test_unknown_product_names_the_choices():
    with pytest.raises(InputError) as err:
        inventory_from_text(inventory(product="atlas-9000"), file="inv.yaml")
    assert "'atlas-9000' is not a product" in str(err.value)
    assert "atlas-350" in str(err.value)


def test_the_undocumented_products_are_data_of_the_same_model():
    """Atlas 850 sizes map to their topology files, so documenting it is a data change."""
    atlas_850 = UNDOCUMENTED_PRODUCTS["atlas-850"]
    assert atlas_850.allowed_npus == (8, 16, 32)
    assert atlas_850.topology_file(16) == "/usr/local/Ascend/driver/topo/950/atlas_850_2.json"
    assert not set(UNDOCUMENTED_PRODUCTS) & set(PRODUCTS)
    assert all(p.documented for p in PRODUCTS.values())


def test_earlier_generations_keep_their_rank_table_versions():
    assert PRODUCTS["atlas-800"].ranktable_version == "1.0"
    assert PRODUCTS["atlas-a2"].ranktable_version == "1.0"
    assert PRODUCTS["atlas-a3"].ranktable_version == "1.2"
    assert not any(PRODUCTS[p].is_950 for p in ("atlas-800", "atlas-a2", "atlas-a3"))
